# SPDX-License-Identifier: Apache-2.0
# Project-wide settings as an INTERFACE target, linked PRIVATE by our own code only
# (never by third-party code), so warnings and sanitizers never leak into dependencies.
add_library(tfork_settings INTERFACE)
target_compile_features(tfork_settings INTERFACE cxx_std_23)
target_compile_options(tfork_settings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual
  -Wnull-dereference -Wimplicit-fallthrough
  $<$<BOOL:${TFORK_WARNINGS_AS_ERRORS}>:-Werror>)
# Each function and object in its own section, and the linker drops what nothing references:
# the executable maps less code (cli.md §9: start-up and peak memory).
target_compile_options(tfork_settings INTERFACE -ffunction-sections -fdata-sections)
target_link_options(tfork_settings INTERFACE LINKER:--gc-sections)
if(TFORK_SANITIZE)
  target_compile_options(tfork_settings INTERFACE -fsanitize=address,undefined
                         -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(tfork_settings INTERFACE -fsanitize=address,undefined)
endif()
