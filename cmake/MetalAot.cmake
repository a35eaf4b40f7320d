# MetalAot.cmake: compile kernel instantiations ahead of time into one metallib, and write the
# build manifest.
#
#   include(MetalAot)
#   metal_add_aot_library(<target>
#       SOURCE_DIR <kernel tree root> FAMILIES <family>...
#       [DTYPES <dtype>...] [CHUNK_SIZE <n>] [OUTPUT <metallib path>] [FLAGS <metal flag>...]
#       [PYTHON <python>] [PYTHONPATH <dir>])
#
# At configure time `python -m builder.cmake_build.aot_sources` writes one instantiation source per
# chunk of CHUNK_SIZE instantiations (default 250) under ${CMAKE_CURRENT_BINARY_DIR}/<target>/src,
# rewriting a file only when its bytes change. Each source gets one custom command
#   [METAL_COMPILER_LAUNCHER...] metal FLAGS -I SOURCE_DIR -c x.metal -o x.air -MMD -MF x.d
# whose DEPFILE is the compiler's own list of the headers it read, so no header is listed by hand
# (MLX's build_kernel lists them in DEPENDS and misses some); then one command links every .air:
#   metallib a.air b.air ... -o OUTPUT
# <target> is an ALL custom target; its properties METAL_METALLIB, METAL_AIR_FILES, METAL_SOURCES
# and METAL_PLAN (the JSON plan: host names per source) describe what it builds.
#
#   metal_add_build_manifest(<target> OUTPUT <manifest.json> CONFIG <config json>
#       [AOT <aot target>] [JIT <jit target>] [PYTHON <python>] [PYTHONPATH <dir>])
#
# Writes the build manifest at build time, after the metallib and the host JIT library exist,
# from the AOT plan, the JIT generator's embed.json and the configure-time CONFIG (options and
# toolchain identity). See docs/build.md for its fields.

include_guard(GLOBAL)
include(MetalToolchain)

set(_METAL_AOT_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")

# _metal_python(<out_python> <out_pythonpath> <python arg> <pythonpath arg>): defaults for the
# interpreter (Python3_EXECUTABLE) and for PYTHONPATH (the directory holding the builder package).
function(_metal_python out_py out_path py path)
  if(NOT py)
    if(NOT Python3_EXECUTABLE)
      find_package(Python3 3.10 REQUIRED COMPONENTS Interpreter)
    endif()
    set(py "${Python3_EXECUTABLE}")
  endif()
  if(NOT path)
    if(METAL_PYTHONPATH)
      set(path "${METAL_PYTHONPATH}")
    else()
      get_filename_component(path "${_METAL_AOT_CMAKE_DIR}/.." ABSOLUTE)
    endif()
  endif()
  set(${out_py} "${py}" PARENT_SCOPE)
  set(${out_path} "${path}" PARENT_SCOPE)
endfunction()

function(metal_add_aot_library target)
  cmake_parse_arguments(PARSE_ARGV 1 arg ""
    "SOURCE_DIR;CHUNK_SIZE;OUTPUT;PYTHON;PYTHONPATH" "FAMILIES;DTYPES;FLAGS")
  if(NOT arg_SOURCE_DIR OR NOT arg_FAMILIES)
    message(FATAL_ERROR "metal_add_aot_library(${target}): SOURCE_DIR and FAMILIES are required")
  endif()
  if(NOT arg_CHUNK_SIZE)
    set(arg_CHUNK_SIZE 250)
  endif()
  if(NOT arg_OUTPUT)
    set(arg_OUTPUT "${CMAKE_CURRENT_BINARY_DIR}/mlx.metallib")
  endif()
  get_filename_component(source_dir "${arg_SOURCE_DIR}" ABSOLUTE)
  _metal_python(python pythonpath "${arg_PYTHON}" "${arg_PYTHONPATH}")
  metal_find_toolchain(REQUIRED)

  set(gen_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}")
  list(JOIN arg_FAMILIES "," families)
  list(JOIN arg_DTYPES "," dtypes)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env "PYTHONPATH=${pythonpath}" PYTHONDONTWRITEBYTECODE=1
            "${python}" -m builder.cmake_build.aot_sources --source-dir "${source_dir}"
            --families "${families}" --dtypes "${dtypes}" --chunk-size "${arg_CHUNK_SIZE}"
            --out-dir "${gen_dir}/src" --plan "${gen_dir}/plan.json"
    OUTPUT_VARIABLE sources ERROR_VARIABLE err RESULT_VARIABLE rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "metal_add_aot_library(${target}): generating sources failed:\n${err}")
  endif()
  # A changed catalog or generator re-runs configuration (which rewrites only changed sources).
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
    "${source_dir}/catalog.json"
    "${pythonpath}/builder/cmake_build/aot_sources.py"
    "${pythonpath}/builder/kernels/catalog.py")

  set(airs "")
  foreach(src IN LISTS sources)
    get_filename_component(stem "${src}" NAME_WE)
    set(air "${gen_dir}/air/${stem}.air")
    set(dep "${gen_dir}/air/${stem}.d")
    add_custom_command(
      OUTPUT "${air}"
      COMMAND ${METAL_COMPILER_LAUNCHER} "$<TARGET_FILE:Metal::compiler>" ${arg_FLAGS}
              -I "${source_dir}" -c "${src}" -o "${air}" -MMD -MF "${dep}"
      DEPENDS "${src}"
      DEPFILE "${dep}"
      COMMENT "Compiling Metal ${stem}.air"
      VERBATIM COMMAND_EXPAND_LISTS)
    list(APPEND airs "${air}")
  endforeach()
  get_filename_component(out_name "${arg_OUTPUT}" NAME)
  add_custom_command(
    OUTPUT "${arg_OUTPUT}"
    COMMAND "$<TARGET_FILE:Metal::linker>" ${airs} -o "${arg_OUTPUT}"
    DEPENDS ${airs}
    COMMENT "Linking ${out_name}"
    VERBATIM)
  add_custom_target(${target} ALL DEPENDS "${arg_OUTPUT}")
  set_target_properties(${target} PROPERTIES
    METAL_METALLIB "${arg_OUTPUT}"
    METAL_AIR_FILES "${airs}"
    METAL_SOURCES "${sources}"
    METAL_PLAN "${gen_dir}/plan.json")
endfunction()

function(metal_add_build_manifest target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "OUTPUT;CONFIG;AOT;JIT;PYTHON;PYTHONPATH" "")
  if(NOT arg_OUTPUT OR NOT arg_CONFIG)
    message(FATAL_ERROR "metal_add_build_manifest(${target}): OUTPUT and CONFIG are required")
  endif()
  _metal_python(python pythonpath "${arg_PYTHON}" "${arg_PYTHONPATH}")
  set(args --build-dir "${CMAKE_BINARY_DIR}" --config "${arg_CONFIG}" --out "${arg_OUTPUT}")
  set(depends "${arg_CONFIG}" "${pythonpath}/builder/manifest.py")
  if(arg_AOT)
    get_target_property(plan ${arg_AOT} METAL_PLAN)
    get_target_property(metallib ${arg_AOT} METAL_METALLIB)
    list(APPEND args --aot-plan "${plan}" --metallib "${metallib}")
    list(APPEND depends "${plan}" "${metallib}" ${arg_AOT})
  endif()
  if(arg_JIT)
    set(embed "${CMAKE_CURRENT_BINARY_DIR}/${arg_JIT}/embed.json")
    list(APPEND args --embed "${embed}" --host-library "$<TARGET_FILE:${arg_JIT}>")
    list(APPEND depends "${embed}" ${arg_JIT})
  endif()
  add_custom_command(
    OUTPUT "${arg_OUTPUT}"
    COMMAND "${CMAKE_COMMAND}" -E env "PYTHONPATH=${pythonpath}" PYTHONDONTWRITEBYTECODE=1
            "${python}" -m builder.manifest ${args}
    DEPENDS ${depends}
    COMMENT "Writing build manifest"
    VERBATIM)
  add_custom_target(${target} ALL DEPENDS "${arg_OUTPUT}")
endfunction()
