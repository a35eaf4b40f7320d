// Included first (-include) when metallib-builder preprocesses a Metal entry file for discovery.
// clang's feature queries, which Metal sources may use in #if; GCC has no such operators and
// would stop at them, so there they answer 0 ("not supported").
#ifndef __has_feature
#define __has_feature(x) 0
#endif
#ifndef __has_extension
#define __has_extension(x) 0
#endif
