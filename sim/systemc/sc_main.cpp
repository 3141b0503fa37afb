// libsystemc's own main() calls sc_main (a C symbol), so libsystemc.so cannot link without it;
// mimic never enters SystemC that way (its executables have their own main and drive the kernel
// through run_until_idle). sim/CMakeLists.txt makes every binary that links mimic_sim_systemc pull
// this definition in (--undefined=sc_main), whichever of the library's other objects it uses.
extern "C" int sc_main(int, char**) {
  return 1;
}
