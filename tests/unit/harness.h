/* harness.h - the unit-test harness: CHECK records a failure and goes on,
 * TEST_MAIN runs the listed tests and closes with `N passed, N failed`.
 * A test counts as passed when none of its checks failed. */
#ifndef SS_TEST_HARNESS_H
#define SS_TEST_HARNESS_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int harness_failed_checks;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "  %s:%d: check failed: %s\n",         \
				__FILE__, __LINE__, #cond);                    \
			harness_failed_checks++;                               \
		}                                                              \
	} while (0)

#define CHECKF(cond, ...)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "  %s:%d: check failed: %s: ",         \
				__FILE__, __LINE__, #cond);                    \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			harness_failed_checks++;                               \
		}                                                              \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                     \
	CHECKF((unsigned long long)(a) == (unsigned long long)(b),             \
	       "%#llx != %#llx", (unsigned long long)(a),                      \
	       (unsigned long long)(b))

/* Runs a shell command built printf-style (tests build their own fixture
 * programs with the compilers); returns system()'s status. */
static inline int harness_sh(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline int harness_sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

struct harness_test {
	const char *name;
	void (*fn)(void);
};

static inline int harness_run(const char *suite, const struct harness_test *t,
			      size_t n, int argc, char **argv)
{
	int passed = 0, failed = 0;

	for (size_t i = 0; i < n; i++) {
		int before = harness_failed_checks;

		if (argc > 1 && !strstr(t[i].name, argv[1]))
			continue;
		t[i].fn();
		if (harness_failed_checks == before) {
			printf("ok   %s: %s\n", suite, t[i].name);
			passed++;
		} else {
			printf("FAIL %s: %s\n", suite, t[i].name);
			failed++;
		}
		fflush(stdout);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

#define TEST(name) { #name, name }
#define TEST_MAIN(suite, ...)                                                  \
	int main(int argc, char **argv)                                        \
	{                                                                      \
		static const struct harness_test tests[] = { __VA_ARGS__ };    \
		return harness_run(suite, tests,                               \
				   sizeof(tests) / sizeof(tests[0]), argc,     \
				   argv);                                      \
	}

/* A whole file into a malloc'ed buffer (NULL when unreadable or empty),
 * and bytes written to a new file of mode 0600 (for cache-file tests). */
static inline unsigned char *harness_slurp(const char *p, size_t *len)
{
	FILE *f = fopen(p, "rb");
	unsigned char *b = NULL;
	long n;

	*len = 0;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	if (n > 0 && (b = malloc((size_t)n)) && fread(b, 1, (size_t)n, f) == (size_t)n)
		*len = (size_t)n;
	fclose(f);
	return b;
}

static inline int harness_spit(const char *p, const void *b, size_t len)
{
	FILE *f;
	int ok;

	remove(p);
	f = fopen(p, "wb");
	ok = f && fwrite(b, 1, len, f) == len;
	if (f)
		fclose(f);
	return ok && chmod(p, 0600) == 0 ? 0 : -1;
}

#endif
