/*
 * execmapper: a flood of mapping records, as a JIT makes them. Maps an
 * anonymous executable page and unmaps it, in a loop, for MS
 * milliseconds; writes one byte to stdout after its first mapping (so a
 * test knows the flood has begun), then prints how many it made.
 *
 * Usage: execmapper MS
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	long long end, n = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: execmapper MS\n");
		return 2;
	}
	end = now_ms() + atoll(argv[1]);
	do {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		munmap(p, 4096);
		if (n++ == 0 && write(1, "m", 1) != 1)
			return 1;
	} while ((n & 1023) || now_ms() < end);
	printf("%lld\n", n);
	return 0;
}
