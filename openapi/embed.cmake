# Turns a text file into a C array (no xxd needed).
# cmake -DIN=<file> -DOUT=<file.c> -DSYM=<name> [-DHDR=<header>] -P embed.cmake
# HDR: the header declaring SYM (default openapi/internal.h; instance/ uses it too).
if(NOT HDR)
  set(HDR openapi/internal.h)
endif()
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n\t" bytes "${bytes}")
get_filename_component(name "${IN}" NAME)
file(WRITE "${OUT}.tmp"
"/* Generated from ${name} by openapi/embed.cmake; do not edit. */\n"
"#include \"${HDR}\"\n\n"
"const char ${SYM}[] = {\n\t${bytes}0x00\n};\n"
"const size_t ${SYM}_len = ${len};\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
