# cmake -DIN=<file> -DOUT=<file.cc> -DSYM=<name> -P RillEmbed.cmake
# Writes OUT defining `const unsigned char SYM[]` (IN's bytes and a
# trailing 0, so PTX text is a C string) and `const std::size_t SYM_size`.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR nbytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," arr "${hex}")
file(WRITE ${OUT} "#include <cstddef>\nalignas(8) extern const unsigned char ${SYM}[] = {${arr} 0x00};\nextern const std::size_t ${SYM}_size = ${nbytes};\n")
