# Small helpers shared by every CMakeLists.txt of Rill.

set(RILL_WARNINGS -Wall -Wextra -Wno-unused-parameter)

if(RILL_SANITIZER STREQUAL "thread")
  add_compile_options(-fsanitize=thread -g -O1 -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(RILL_SANITIZER STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -g -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(RILL_SANITIZER STREQUAL "fuzz")
  # libFuzzer (clang only): everything instrumented for coverage and checked
  # by ASan and UBSan; only the fuzz targets link libFuzzer's main().
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "RILL_SANITIZER=fuzz needs clang (CXX=clang++), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -g
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
elseif(NOT RILL_SANITIZER STREQUAL "")
  message(FATAL_ERROR "RILL_SANITIZER must be '', 'thread', 'address' or 'fuzz', not '${RILL_SANITIZER}'")
endif()

# What a test that runs Open MPI needs under ASan: MPI's components kept
# loaded and whole stacks, so that the MPI entries of scripts/lsan.supp match
# what MPI_Init keeps until exit (scripts/test.sh --fuzz sets the same for
# the tests it runs directly). Empty in other builds.
set(RILL_MPI_TEST_ENV "")
if(RILL_SANITIZER MATCHES "^(address|fuzz)$")
  set(RILL_MPI_TEST_ENV
    "OMPI_MCA_mca_base_component_disable_dlclose=1"
    "ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:fast_unwind_on_malloc=0"
    "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/scripts/lsan.supp:fast_unwind_on_malloc=0")
endif()

# Rill's headers are included with their prefix, "rill/stream/stream.h", in
# the tree as in the installed package (include/rill/...), so that Rill's
# base/logging.h cannot collide with another project's. In the tree the
# prefix is a link, <build>/include/rill -> the source folder.
set(RILL_BUILD_INCLUDE_DIR ${PROJECT_BINARY_DIR}/include)
file(MAKE_DIRECTORY ${RILL_BUILD_INCLUDE_DIR})
file(CREATE_LINK ${PROJECT_SOURCE_DIR} ${RILL_BUILD_INCLUDE_DIR}/rill SYMBOLIC)

# rill_add_library(<name> SOURCES ... [DEPS ...] [PRIVATE_DEPS ...])
# Builds the static library rill_<name>, exported as rill::<name>.
function(rill_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(rill_${name} STATIC ${ARG_SOURCES})
  add_library(rill::${name} ALIAS rill_${name})
  set_target_properties(rill_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME rill_${name})
  target_compile_options(rill_${name} PRIVATE ${RILL_WARNINGS})
  # Rill's headers are C++20: consumers of the installed package get it too.
  target_compile_features(rill_${name} PUBLIC cxx_std_20)
  target_include_directories(rill_${name} PUBLIC
    $<BUILD_INTERFACE:${RILL_BUILD_INCLUDE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(rill_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  set_property(GLOBAL APPEND PROPERTY RILL_EXPORTED_TARGETS rill_${name})
endfunction()

# rill_add_backend, rill_add_plugin, rill_add_conformance_test: also for
# outside projects, so installed with the package.
include(${CMAKE_CURRENT_LIST_DIR}/RillBackend.cmake)

# rill_add_test(<name> SOURCES ... [DEPS ...] [LABELS ...] [ENV ...])
# A GoogleTest binary; every test case becomes a ctest test carrying LABELS
# (the test script picks sanitizer runs by label: "stream", "conformance").
# Does nothing when RILL_BUILD_TESTS is OFF.
function(rill_add_test name)
  if(NOT RILL_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS;ENV" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${RILL_WARNINGS})
  # Test helpers are included from the source tree: "tests/testing/...".
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${name}
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${ARG_LABELS}" ENVIRONMENT "${ARG_ENV}" TIMEOUT 120)
  # For rill_add_label_targets: the test binaries of each label.
  foreach(label IN LISTS ARG_LABELS)
    set_property(GLOBAL APPEND PROPERTY RILL_TEST_LABELS "${label}")
    set_property(GLOBAL APPEND PROPERTY RILL_TESTS_WITH_LABEL_${label} ${name})
  endforeach()
endfunction()

# rill_add_label_targets(): after every folder, one target per test label,
# `tests_<label>`, that builds just the test binaries carrying it (and what
# they link), so a mode that runs some labels builds only those
# (scripts/test.sh --tsan).
function(rill_add_label_targets)
  get_property(labels GLOBAL PROPERTY RILL_TEST_LABELS)
  list(REMOVE_DUPLICATES labels)
  foreach(label IN LISTS labels)
    get_property(tests GLOBAL PROPERTY RILL_TESTS_WITH_LABEL_${label})
    add_custom_target(tests_${label})
    add_dependencies(tests_${label} ${tests})
  endforeach()
endfunction()

# rill_summary(<category> <name> <ON|OFF> <why>)
# Records one row of the configure summary that the top-level
# CMakeLists.txt prints last (rill_print_summary). <category> is backend,
# plugin, layer or build; rows print grouped by category, in the order they
# were recorded. A later call for the same row replaces it.
function(rill_summary category name state why)
  set(label "${name}")
  if(category STREQUAL "backend" OR category STREQUAL "plugin")
    set(label "${name} ${category}")
  endif()
  string(MAKE_C_IDENTIFIER "${category}_${name}" key)
  get_property(rows GLOBAL PROPERTY RILL_SUMMARY_ROWS_${category})
  if(NOT key IN_LIST rows)
    set_property(GLOBAL APPEND PROPERTY RILL_SUMMARY_ROWS_${category} "${key}")
  endif()
  set_property(GLOBAL PROPERTY RILL_SUMMARY_LABEL_${key} "${label}")
  set_property(GLOBAL PROPERTY RILL_SUMMARY_STATE_${key} "${state}")
  set_property(GLOBAL PROPERTY RILL_SUMMARY_WHY_${key} "${why}")
endfunction()

# rill_print_summary(): the one table of what is built and why.
function(rill_print_summary)
  set(width 0)
  foreach(category backend plugin layer build)
    get_property(rows GLOBAL PROPERTY RILL_SUMMARY_ROWS_${category})
    foreach(key IN LISTS rows)
      get_property(label GLOBAL PROPERTY RILL_SUMMARY_LABEL_${key})
      string(LENGTH "${label}" len)
      if(len GREATER width)
        set(width ${len})
      endif()
    endforeach()
  endforeach()
  math(EXPR width "${width} + 2")
  message(STATUS "Rill configuration summary")
  foreach(category backend plugin layer build)
    get_property(rows GLOBAL PROPERTY RILL_SUMMARY_ROWS_${category})
    foreach(key IN LISTS rows)
      get_property(label GLOBAL PROPERTY RILL_SUMMARY_LABEL_${key})
      get_property(state GLOBAL PROPERTY RILL_SUMMARY_STATE_${key})
      get_property(why GLOBAL PROPERTY RILL_SUMMARY_WHY_${key})
      string(LENGTH "${label}" len)
      math(EXPR pad "${width} - ${len}")
      string(REPEAT " " ${pad} spaces)
      set(state_col "${state}  ")
      if(state STREQUAL "ON")
        set(state_col "ON   ")
      endif()
      if(why STREQUAL "")
        message(STATUS "  ${label}${spaces}${state}")
      else()
        message(STATUS "  ${label}${spaces}${state_col}(${why})")
      endif()
    endforeach()
  endforeach()
endfunction()
