/* demangle.c - C++ demangling through the C++ runtime, Rust demangling
 * through libiberty's (the demangler gdb and binutils use), and the
 * renamings gdb applies to symbol names before printing them. */
#include <ctype.h>
#include <dlfcn.h>
#include <libiberty/demangle.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symbolize.h"
#include "symbolize/sym_internal.h"

/* The C++ runtime's demangler, from libstdc++ opened on the first C++
 * name rather than linked: loading and relocating libstdc++ costs every
 * run ~6 ms of CPU at start-up, and a C program's dump never needs it
 * (a C++ program using the library has it loaded already: dlopen then
 * only finds it). */
static char *(*cxa_demangle)(const char *mangled, char *buf, size_t *len,
			     int *status);
static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;

static void cxa_load(void)
{
	void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

	if (h)
		cxa_demangle = (char *(*)(const char *, char *, size_t *, int *))
			dlsym(h, "__cxa_demangle");
}

/* The C++ runtime prints the standard substitutions (Ss, Si, So, Sd) by
 * their typedef names; gdb's demangler spells them out. */
static const struct {
	const char *abbrev, *full;
} std_abbrevs[] = {
	{ "std::string", "std::basic_string<char, std::char_traits<char>, std::allocator<char> >" },
	{ "std::istream", "std::basic_istream<char, std::char_traits<char> >" },
	{ "std::ostream", "std::basic_ostream<char, std::char_traits<char> >" },
	{ "std::iostream", "std::basic_iostream<char, std::char_traits<char> >" },
};

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

/* Returns s with the abbreviations expanded (s itself when none). */
static char *expand_std(char *s)
{
	for (size_t k = 0; k < sizeof(std_abbrevs) / sizeof(std_abbrevs[0]); k++) {
		const char *a = std_abbrevs[k].abbrev, *f = std_abbrevs[k].full;
		size_t al = strlen(a), fl = strlen(f);
		char *p = s;

		while ((p = strstr(p, a))) {
			size_t off = (size_t)(p - s), len = strlen(s);
			char *g;

			if ((off > 0 && (ident_char(s[off - 1]) || s[off - 1] == ':')) ||
			    ident_char(p[al])) {
				p += al;
				continue;
			}
			/* "> >": gdb keeps nested closers apart. */
			bool sep = p[al] == '>';

			g = malloc(len - al + fl + sep + 1);
			if (!g)
				return s;
			memcpy(g, s, off);
			memcpy(g + off, f, fl);
			if (sep)
				g[off + fl] = ' ';
			memcpy(g + off + fl + sep, p + al, len - off - al + 1);
			free(s);
			s = g;
			p = s + off + fl;
		}
	}
	return s;
}

/* Is name a Rust symbol: v0 ("_R...") or legacy, an Itanium nested name
 * whose last component is the hash ("_ZN...17h<16 hex digits>E", maybe
 * followed by a ".llvm.N" suffix)? Checked before asking libiberty so
 * C++ names cost nothing more. */
static bool rust_mangled(const char *name)
{
	const char *e;

	if (!strncmp(name, "_R", 2))
		return true;
	if (strncmp(name, "_ZN", 3) != 0)
		return false;
	e = strstr(name, ".llvm.");
	if (!e)
		e = name + strlen(name);
	if (e - name < 3 + 20 || e[-1] != 'E' || strncmp(e - 20, "17h", 3) != 0)
		return false;
	for (const char *p = e - 17; p < e - 1; p++)
		if (!isxdigit((unsigned char)*p))
			return false;
	return true;
}

/* A Rust symbol as gdb 13 prints a minimal symbol: libiberty's
 * rust_demangle, verbose as gdb asks it: legacy names keep the hash
 * ("rs::main::h089e9077150c930c", "{{closure}}"), v0 names the crate
 * disambiguators ("rs[5d05b3d299df4931]::main"). Functions with DWARF
 * are named from their DWARF scopes instead (line_info.c). */
/* Weak: a program linking libstacksnap.a without libiberty still links
 * (its Rust symbols then stay mangled; DWARF names are unaffected). The
 * CLI and libstacksnap.so link it in with -Wl,-u,rust_demangle -liberty:
 * a weak reference alone pulls nothing out of an archive. */
extern __typeof__(rust_demangle) rust_demangle __attribute__((weak));

static char *rust_name(const char *name)
{
	if (!rust_demangle)
		return NULL;
	return rust_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE);
}

char *demangle(const char *name)
{
	int status = 0;
	char *s;

	if (!name)
		return NULL;
	if (rust_mangled(name) && (s = rust_name(name)))
		return s;
	if (strncmp(name, "_Z", 2) != 0)
		return NULL;
	pthread_once(&cxa_once, cxa_load);
	if (!cxa_demangle)
		return NULL;
	s = cxa_demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(s);
		return NULL;
	}
	return expand_std(s);
}

/* Index of the '(' matching the ')' at s[close], or -1. */
static long matching_open(const char *s, long close)
{
	int depth = 0;

	for (long i = close; i >= 0; i--) {
		if (s[i] == ')')
			depth++;
		else if (s[i] == '(' && --depth == 0)
			return i;
	}
	return -1;
}

void sym_strip_params(char *s)
{
	long n = (long)strlen(s), open, space = -1;
	int depth = 0;

	/* Trailing qualifiers (" const", " &&", " [clone .cold]") sit after
	 * the parameter list; the list is the last balanced "(...)" that
	 * is not part of a "[clone ...]". */
	while (n > 0 && s[n - 1] != ')')
		n--;
	if (n == 0)
		return;
	open = matching_open(s, n - 1);
	if (open <= 0)
		return;
	s[open] = 0;
	/* A template function's demangling starts with its return type,
	 * separated by the last top-level space not belonging to an
	 * "operator" name. */
	for (long i = 0; i < open; i++) {
		char c = s[i];

		if (c == '<' || c == '(' || c == '[')
			depth++;
		else if ((c == '>' || c == ')' || c == ']') && depth > 0)
			depth--;
		else if (c == ' ' && depth == 0 &&
			 !(i >= 8 && !strncmp(s + i - 8, "operator", 8)))
			space = i;
	}
	if (space >= 0)
		memmove(s, s + space + 1, strlen(s + space + 1) + 1);
}

/* gdb tries its Ada decoder on every minimal symbol name; on lower-case
 * C names with GCC clone suffixes it succeeds, so "f.cold" prints as
 * "f[cold]" and a trailing ".N" ("f.part.0", "f.isra.0") is dropped.
 * Names with a leading '_' or an upper-case letter are left alone. */
static void ada_like_rename(char *s)
{
	size_t n = strlen(s), i;

	if (!n || s[0] == '_' || !strchr(s, '.'))
		return;
	for (i = 0; i < n; i++)
		if (isupper((unsigned char)s[i]))
			return;
	if (n > 5 && !strcmp(s + n - 5, ".cold")) {
		strcpy(s + n - 5, "[cold]"); /* the caller left room */
		return;
	}
	i = n;
	while (i > 0 && isdigit((unsigned char)s[i - 1]))
		i--;
	if (i < n && i > 0 && s[i - 1] == '.')
		s[i - 1] = 0;
}

char *sym_gdb_name(const char *name, size_t len, bool want_demangle,
		   bool dwarf_function)
{
	char *raw = malloc(len + 2); /* +1: ".cold" grows to "[cold]" */
	char *d;

	if (!raw)
		return NULL;
	memcpy(raw, name, len);
	raw[len] = 0;
	if (want_demangle && (d = demangle(raw))) {
		free(raw);
		if (dwarf_function)
			sym_strip_params(d);
		return d;
	}
	if (!dwarf_function)
		ada_like_rename(raw);
	return raw;
}
