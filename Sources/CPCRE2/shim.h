// The 8-bit library: filters match UTF-8 text and raw bytes.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
