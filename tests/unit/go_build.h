/* go_build.h - builds the Go test programs of tests/targets/ with the
 * system's go (1.19), offline, in a private cache: plain (with DWARF,
 * uncompressed so libdw reads .debug_frame) and stripped (-s -w). */
#ifndef SS_TEST_GO_BUILD_H
#define SS_TEST_GO_BUILD_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

/* Builds tests/targets/NAME.go into DIR/NAME (DWARF) and DIR/NAME_s
 * (stripped); tests run from the source tree (or $SS_SRCDIR). Returns 0,
 * 1 when go is missing (the caller skips), -1 when the build fails (a
 * failed check). */
static inline int go_build_target(const char *name, char *dir, size_t dirlen)
{
	char src[4096];

	if (!getcwd(src, sizeof(src)))
		return -1;
	snprintf(dir, dirlen, "/tmp/ss_go_XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	if (harness_sh("command -v go >/dev/null 2>&1") != 0) {
		fprintf(stderr, "  go not installed: skipped\n");
		return 1;
	}
	return harness_sh(
		"cd %s && export GOCACHE=%s/cache GOPATH=%s/gopath "
		"GOFLAGS=-mod=mod GO111MODULE=off GOPROXY=off CGO_ENABLED=0 && "
		"cp '%s/tests/targets/%s.go' main.go && "
		"go build -ldflags=-compressdwarf=false -o %s main.go && "
		"go build -ldflags='-s -w' -o %s_s main.go",
		dir, dir, dir, getenv("SS_SRCDIR") ? getenv("SS_SRCDIR") : src,
		name, name, name) == 0 ? 0 : -1;
}

/* For tests: builds once; true when the programs are there. A failed
 * build is a failed check, a missing go a skip. */
static inline bool go_build_once(const char *name, char *dir, size_t dirlen,
				 int *state)
{
	if (*state == -2)
		*state = go_build_target(name, dir, dirlen);
	CHECKF(*state >= 0, "building %s.go failed", name);
	return *state == 0;
}

static inline void go_build_cleanup(const char *dir)
{
	if (dir[0])
		harness_sh("rm -rf '%s'", dir);
}

#endif
