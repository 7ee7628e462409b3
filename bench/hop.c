/* hop.c - a small shared library the stall target loads under several file
 * names, so a stack passes through many modules (the many-libraries case):
 * each copy adds three frames of its own and calls the next copy. */
#define NOINLINE __attribute__((noinline))

/* hops is the table of hop_fn; void * because a function type cannot name
 * itself. */
typedef void (*hop_fn)(const void *hops, int i, int n, void (*leaf)(void));

void hop_enter(const void *hops, int i, int n, void (*leaf)(void));

static volatile int sink;

NOINLINE static void hop_inner(const hop_fn *hops, int i, int n,
			       void (*leaf)(void))
{
	volatile char pad[24];

	pad[i % 24] = (char)i;
	if (i + 1 < n)
		hops[i + 1](hops, i + 1, n, leaf);
	else
		leaf();
	sink += pad[i % 24];
}

NOINLINE static void hop_middle(const hop_fn *hops, int i, int n,
				void (*leaf)(void))
{
	hop_inner(hops, i, n, leaf);
	sink++;
}

/* Exported, and called through the table, not through a PLT: the copies
 * all export the same name. */
__attribute__((visibility("default"))) void hop_enter(const void *hops, int i,
						      int n, void (*leaf)(void))
{
	hop_middle(hops, i, n, leaf);
	sink++;
}
