# probegenConfig.cmake: USDT probes from a probegen catalog in a CMake build.
#
# It ships with probegen; `probegen paths --cmake-dir` prints its directory:
#
#   find_package(probegen CONFIG REQUIRED)   # with -Dprobegen_DIR=$(probegen paths --cmake-dir)
#
# or, to find it through the probegen on PATH:
#
#   find_program(PROBEGEN_EXECUTABLE probegen REQUIRED)
#   execute_process(COMMAND ${PROBEGEN_EXECUTABLE} paths --cmake-dir
#     OUTPUT_VARIABLE probegen_cmake_dir OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
#   find_package(probegen CONFIG REQUIRED HINTS ${probegen_cmake_dir})
#
# (or include(${probegen_cmake_dir}/probegenConfig.cmake)).
#
# Then:
#
#   probegen_add_header(<name> CATALOG <probes.yaml> [OUTPUT <header>] [USDT <bool>])
#
#     An INTERFACE library <name>. Linking it to a target generates the
#     header before the target compiles, puts the header's directory on its
#     include path and, with USDT true (the default), defines the catalog's
#     header.enable_macro so the probes are compiled in. CATALOG is relative
#     to the current source directory, OUTPUT (default: <name>.h) to the
#     current binary directory. The header is regenerated when the catalog
#     or probegen's template changes (a depfile names both) and rewritten
#     only when its content changes, so touching the catalog recompiles
#     nothing. The enable macro is read when CMake configures: after
#     changing header.enable_macro in the catalog, re-run cmake.
#
#   probegen_add_test(<test> HEADER <name> TARGETS <target>...)
#
#     A CTest test: `probegen verify` checks that the built targets carry
#     exactly the catalog's probes, or, with USDT false, that they carry
#     none (`--expect-none`). Needs enable_testing() or include(CTest).
#
# PROBEGEN_EXECUTABLE (a cache variable) is the probegen that runs; by
# default the one installed with this module, else the first on PATH.

if(CMAKE_VERSION VERSION_LESS 3.20)
  # DEPFILE in add_custom_command with Makefile generators needs 3.20.
  message(FATAL_ERROR "probegen's CMake module needs CMake 3.20 or newer (this is ${CMAKE_VERSION})")
endif()
# Recorded into the functions below: depfile paths as written (CMP0116).
cmake_policy(PUSH)
cmake_policy(VERSION 3.20)

# This file is <prefix>/lib/pythonX.Y/site-packages/probegen/data/cmake;
# the probegen script of that installation is in <prefix>/bin.
get_filename_component(_probegen_prefix "${CMAKE_CURRENT_LIST_DIR}/../../../../../.." ABSOLUTE)
find_program(PROBEGEN_EXECUTABLE probegen
  HINTS "${_probegen_prefix}/bin"
  DOC "the probegen program")
unset(_probegen_prefix)
if(NOT PROBEGEN_EXECUTABLE)
  set(probegen_FOUND FALSE)
  set(probegen_NOT_FOUND_MESSAGE
    "the probegen program was not found: install probegen (pip install probegen) or set PROBEGEN_EXECUTABLE")
  cmake_policy(POP)
  return()
endif()

# include()d directly rather than through find_package(): no version yet.
if(NOT DEFINED probegen_VERSION)
  function(_probegen_read_version)
    include("${CMAKE_CURRENT_FUNCTION_LIST_DIR}/probegenConfigVersion.cmake")
    set(probegen_VERSION "${PACKAGE_VERSION}" PARENT_SCOPE)
  endfunction()
  _probegen_read_version()
endif()

# A module from one installation driving another installation's probegen
# would generate headers the module does not describe.
execute_process(COMMAND "${PROBEGEN_EXECUTABLE}" --version
  OUTPUT_VARIABLE _probegen_version_line OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _probegen_result)
if(NOT _probegen_result EQUAL 0 OR NOT _probegen_version_line STREQUAL "probegen ${probegen_VERSION}")
  set(probegen_FOUND FALSE)
  set(probegen_NOT_FOUND_MESSAGE
    "${PROBEGEN_EXECUTABLE} says '${_probegen_version_line}', this module is probegen ${probegen_VERSION} "
    "(${CMAKE_CURRENT_LIST_DIR}): set PROBEGEN_EXECUTABLE to the probegen installed with it")
  unset(_probegen_version_line)
  unset(_probegen_result)
  cmake_policy(POP)
  return()
endif()
unset(_probegen_version_line)
unset(_probegen_result)

function(probegen_add_header name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "CATALOG;OUTPUT;USDT" "")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "probegen_add_header(${name}): unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_CATALOG)
    message(FATAL_ERROR "probegen_add_header(${name}): CATALOG <probes.yaml> is required")
  endif()
  if(NOT arg_OUTPUT)
    set(arg_OUTPUT "${name}.h")
  endif()
  if(NOT DEFINED arg_USDT)
    set(arg_USDT ON)
  endif()
  get_filename_component(catalog "${arg_CATALOG}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  get_filename_component(output "${arg_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  get_filename_component(output_dir "${output}" DIRECTORY)

  # Also checks the catalog now, so its mistakes show when CMake configures.
  execute_process(COMMAND "${PROBEGEN_EXECUTABLE}" header --catalog "${catalog}" --print-enable-macro
    OUTPUT_VARIABLE enable_macro ERROR_VARIABLE error RESULT_VARIABLE result
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "probegen_add_header(${name}): ${error}")
  endif()

  # The rule's output is a stamp, touched on every run, and the header a
  # byproduct that keeps its mtime when unchanged: then neither generator
  # reruns probegen after a touch of the catalog (make compared the header's
  # old mtime with the catalog's) and nothing recompiles.
  add_custom_command(OUTPUT "${output}.stamp"
    BYPRODUCTS "${output}"
    COMMAND "${PROBEGEN_EXECUTABLE}" header --catalog "${catalog}" -o "${output}"
            --stamp "${output}.stamp" --depfile "${output}.stamp.d"
    DEPENDS "${catalog}"
    DEPFILE "${output}.stamp.d"
    COMMENT "probegen: generating ${arg_OUTPUT}"
    VERBATIM)
  add_custom_target(${name}_generate DEPENDS "${output}.stamp")

  add_library(${name} INTERFACE)
  # Followed transitively: every target linking ${name} builds after the header exists.
  add_dependencies(${name} ${name}_generate)
  target_include_directories(${name} INTERFACE "${output_dir}")
  if(arg_USDT AND enable_macro)
    target_compile_definitions(${name} INTERFACE "${enable_macro}")
  elseif(NOT arg_USDT AND NOT enable_macro)
    # A dtrace-style header without an enable macro always compiles its probes in.
    message(FATAL_ERROR "probegen_add_header(${name}): USDT is off, but ${arg_CATALOG} sets no "
      "header.enable_macro, so its probes cannot be compiled out: set one in the catalog")
  endif()
  set_target_properties(${name} PROPERTIES
    PROBEGEN_CATALOG "${catalog}"
    PROBEGEN_HEADER "${output}"
    PROBEGEN_ENABLE_MACRO "${enable_macro}"
    PROBEGEN_USDT "${arg_USDT}")
endfunction()

function(probegen_add_test test_name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "HEADER" "TARGETS")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_HEADER OR NOT arg_TARGETS)
    message(FATAL_ERROR "probegen_add_test(${test_name}): usage: "
      "probegen_add_test(<test> HEADER <probegen_add_header name> TARGETS <target>...)")
  endif()
  get_target_property(catalog ${arg_HEADER} PROBEGEN_CATALOG)
  if(NOT catalog)
    message(FATAL_ERROR "probegen_add_test(${test_name}): ${arg_HEADER} is not a probegen_add_header() target")
  endif()
  get_target_property(usdt ${arg_HEADER} PROBEGEN_USDT)
  set(expect)
  if(NOT usdt)
    set(expect --expect-none)
  endif()
  set(binaries)
  foreach(target IN LISTS arg_TARGETS)
    list(APPEND binaries "$<TARGET_FILE:${target}>")
  endforeach()
  add_test(NAME ${test_name}
    COMMAND "${PROBEGEN_EXECUTABLE}" verify --catalog "${catalog}" ${expect} ${binaries})
endfunction()

cmake_policy(POP)
