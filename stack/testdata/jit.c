// jit.c: opens argv[1] through a few bytes of machine code copied into
// anonymous executable memory, as a JIT compiler's code would call out:
// the stub keeps a frame pointer, and has no file, no symbol, no CFI.
// Then opens it again from main directly.
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static const unsigned char stub[] = {
	0x55,             // push %rbp
	0x48, 0x89, 0xe5, // mov %rsp,%rbp
	0xff, 0xd6,       // call *%rsi
	0x5d,             // pop %rbp
	0xc3,             // ret
};

__attribute__((noinline)) static int open_ro(const char *p) { return open(p, O_RDONLY); }

int main(int argc, char **argv) {
	if (argc < 2)
		return 2;
	void *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	memcpy(code, stub, sizeof stub);
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC) != 0)
		return 1;
	int (*call)(const char *, int (*)(const char *)) = (int (*)(const char *, int (*)(const char *)))code;
	int fd = call(argv[1], open_ro);
	int again = open_ro(argv[1]);
	printf("%d %d\n", fd, again);
	return fd < 0 || again < 0;
}
