/* mpitrace.h: user regions for mpitrace (libmpitrace.so).
 *
 *   mpitrace_region_begin("solver");
 *   ...
 *   mpitrace_region_end("solver");
 *
 * The functions are defined by libmpitrace.so. To build a program that also
 * runs without the tracer, declare them weak and test them before calling:
 * define MPITRACE_WEAK before including this header, then call through the
 * MPITRACE_REGION_BEGIN / MPITRACE_REGION_END macros, which do nothing when
 * the library is not preloaded.
 */
#ifndef MPITRACE_H
#define MPITRACE_H

#ifdef __cplusplus
extern "C" {
#endif

#ifdef MPITRACE_WEAK
#define MPITRACE_DECL __attribute__((weak))
#else
#define MPITRACE_DECL
#endif

MPITRACE_DECL void mpitrace_region_begin(const char *name);
MPITRACE_DECL void mpitrace_region_end(const char *name);

#define MPITRACE_REGION_BEGIN(name) do { if (mpitrace_region_begin) mpitrace_region_begin(name); } while (0)
#define MPITRACE_REGION_END(name) do { if (mpitrace_region_end) mpitrace_region_end(name); } while (0)

#ifdef __cplusplus
}
#endif

#endif
