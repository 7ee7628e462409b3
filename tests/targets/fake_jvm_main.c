/* fake_jvm_main.c - a process that maps fake_libjvm.c's libjvm.so (see
 * there), prints "ready" and sleeps. */
#include <stdio.h>
#include <unistd.h>

int fake_jvm_major(void);

int main(void)
{
	printf("ready %d\n", fake_jvm_major());
	fflush(stdout);
	for (;;)
		pause();
}
