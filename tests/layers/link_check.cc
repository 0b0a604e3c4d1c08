// Linked (meson.build, layer_link) with one layer's library whole and the
// layers below it: building it proves that layer calls nothing above it.
int main() { return 0; }
