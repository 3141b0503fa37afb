# Compiler flags shared by every mimic target, exposed through the mimic_flags interface target.
add_library(mimic_flags INTERFACE)
target_compile_options(mimic_flags INTERFACE -Wall -Wextra -Wno-unused-parameter)
if(MIMIC_NATIVE AND NOT MIMIC_SANITIZE)
  target_compile_options(mimic_flags INTERFACE -march=native)
endif()
if(MIMIC_SANITIZE)
  target_compile_options(mimic_flags INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer
                                               -fno-sanitize-recover=undefined)
  target_link_options(mimic_flags INTERFACE -fsanitize=address,undefined)
endif()
if(MIMIC_FUZZ)
  # libFuzzer targets (tests/fuzz): every mimic library gets coverage instrumentation, ASan and UBSan.
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "MIMIC_FUZZ=ON needs clang: configure with -DCMAKE_C_COMPILER=clang "
                        "-DCMAKE_CXX_COMPILER=clang++ (scripts/fuzz.sh and scripts/test.sh do)")
  endif()
  target_compile_options(mimic_flags INTERFACE -fsanitize=fuzzer-no-link,address,undefined
                                               -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(mimic_flags INTERFACE -fsanitize=address,undefined)
endif()
if((MIMIC_SANITIZE OR MIMIC_FUZZ) AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  # Sanitizer binaries are large (instrumented code, line tables, static libraries): LLVM's lld
  # links one in about half the time GNU ld takes (setup.sh --test installs it).
  find_program(MIMIC_LLD ld.lld)
  if(MIMIC_LLD)
    target_link_options(mimic_flags INTERFACE -fuse-ld=lld)
  else()
    message(STATUS "mimic: ld.lld not found, sanitizer builds link with the default linker")
  endif()
endif()
target_compile_definitions(mimic_flags INTERFACE MIMIC_VERSION="${PROJECT_VERSION}")

# Test code compiles at -O1 in Release builds: the libraries it calls keep -O3, and -O3 on
# GoogleTest's macro expansions cost a quarter of each test file's compile time for nothing the
# tests need. The shared precompiled header (tests/CMakeLists.txt) is built the same way.
set(MIMIC_TEST_OPTIMIZE $<$<CONFIG:Release>:-O1>)

# mimic_library(NAME SOURCES... [DEPS ...]) defines one static library per folder part.
function(mimic_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${MIMIC_ROOT})
  target_link_libraries(${name} PUBLIC mimic_flags ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
endfunction()

# mimic_test(NAME SOURCES... [LIBS ...] [LABELS ...]): one GoogleTest binary registered with CTest.
# Labels: "unit" (fast, also run under ASan+UBSan), "conformance", "models", "cli", "python".
function(mimic_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  # mimic's flags and OpenMP on every test binary: the shared precompiled header
  # (tests/CMakeLists.txt) is built with them, and a file compiled without them could not use it.
  target_link_libraries(${name} PRIVATE mimic_flags ${ARG_LIBS} GTest::gtest GTest::gtest_main
                                        OpenMP::OpenMP_CXX)
  target_include_directories(${name} PRIVATE ${MIMIC_ROOT})
  # Tests initialize option structs partially ({"key", unit, "text"}), on purpose.
  target_compile_options(${name} PRIVATE -Wno-missing-field-initializers ${MIMIC_TEST_OPTIMIZE})
  target_precompile_headers(${name} REUSE_FROM mimic_test_pch)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  if(MIMIC_TEST_PER_BINARY)
    # The sanitizer build's choice (scripts/test.sh): starting an instrumented process is most of
    # a short case's time there, and the 709 unit cases run in about 60 processes.
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_LIST ${name}_TESTS)
    # Labels are set by a second CTest include file run after the discovered list: passed through
    # gtest_discover_tests(PROPERTIES LABELS a;b), a list of labels becomes LABELS=a plus a property
    # named b, so `ctest -L b` would find nothing.
    set(labels_file "${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake")
    file(WRITE "${labels_file}"
         "if(${name}_TESTS)\n  set_tests_properties(\${${name}_TESTS} PROPERTIES LABELS \"${ARG_LABELS}\")\nendif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${labels_file}")
  endif()
  if("unit" IN_LIST ARG_LABELS)
    if(NOT TARGET unit_tests)
      add_custom_target(unit_tests)
    endif()
    add_dependencies(unit_tests ${name})
  endif()
endfunction()
