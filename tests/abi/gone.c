/* The library librill_abi_test_needs_gone.so needs (tests/abi): built into
 * a folder of its own that the plugin has no run path to, so that loading
 * the plugin fails as it would on a machine without the library. */
__attribute__((visibility("default"))) int rill_abi_test_gone(void) { return 0; }
