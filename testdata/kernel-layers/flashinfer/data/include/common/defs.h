#ifndef COMMON_DEFS_H_
#define COMMON_DEFS_H_
#define NESTED_VALUE 5.0f
#endif  // COMMON_DEFS_H_
