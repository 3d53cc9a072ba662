/* For Rill's ABI tests: a real shared object that is not a plugin. It
 * exports one function, and not RillPluginInit. */
__attribute__((visibility("default"))) int RillAbiTestNotAnEntry(void);

__attribute__((visibility("default"))) int RillAbiTestNotAnEntry(void) { return 42; }
