/* runtime.c - the names of the runtime kinds in text and JSON output. */
#include "runtime/runtime.h"

#include <stddef.h>

const char *runtime_kind__tag(enum runtime_kind kind)
{
	switch (kind) {
	case RUNTIME_PYTHON: return "py";
	case RUNTIME_JAVA: return "java";
	case RUNTIME_JS: return "js";
	case RUNTIME_GO: return "go";
	case RUNTIME_JIT: return "jit";
	case RUNTIME_RUBY: return "rb";
	case RUNTIME_PHP: return "php";
	case RUNTIME_NATIVE: break;
	}
	return NULL;
}

const char *runtime_kind__json(enum runtime_kind kind)
{
	switch (kind) {
	case RUNTIME_PYTHON: return "python";
	case RUNTIME_JAVA: return "java";
	case RUNTIME_JS: return "js";
	case RUNTIME_GO: return "go";
	case RUNTIME_JIT: return "jit";
	case RUNTIME_RUBY: return "ruby";
	case RUNTIME_PHP: return "php";
	case RUNTIME_NATIVE: break;
	}
	return NULL;
}
