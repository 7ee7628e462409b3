/* sre_service.cpp - the C++ service of the SRE tests (cli_sre), in one of
 * its modes (argv[1]):
 *   workers N   N std::thread workers ("worker") blocked on one std::mutex
 *               whose holder ("holder") reads a pipe; the process title is
 *               rewritten in argv's memory, as postgres does;
 *   exit-main   three threads block in read(); main calls pthread_exit();
 *   exit-on-open FILE  a thread watches FILE (a copy of this program) and
 *               calls _exit() when anyone opens it: a dump reading the
 *               executable sees the process exit under it;
 *   throw       a thread throws storage::DiskFull (a std::runtime_error)
 *               that nothing catches;
 *               the terminate handler prints "exception TYPE: WHAT" (from
 *               the runtime itself) and blocks inside std::terminate. */
#include <cxxabi.h>
#include <exception>
#include <mutex>
#include <pthread.h>
#include <stdexcept>
#include <sys/inotify.h>
#include <thread>
#include <vector>
#include "target.h"

static int block_pipe[2];
static std::mutex mu;

NOINLINE static void block_in_read(void)
{
	char c;

	while (read(block_pipe[0], &c, 1) != 0)
		;
	KEEP_FRAME();
}

NOINLINE static void *reader_thread(void *)
{
	block_in_read();
	KEEP_FRAME();
	return nullptr;
}

NOINLINE static void worker(void)
{
	pthread_setname_np(pthread_self(), "worker");
	std::lock_guard<std::mutex> g(mu);
	KEEP_FRAME();
}

NOINLINE static void holder(std::mutex *m)
{
	pthread_setname_np(pthread_self(), "holder");
	std::lock_guard<std::mutex> g(*m);
	block_in_read();
	KEEP_FRAME();
}

/* ps shows /proc/PID/cmdline: argv's memory rewritten in place. */
static void set_title(int argc, char **argv, const char *title)
{
	size_t room = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) - argv[0]);

	memset(argv[0], 0, room);
	snprintf(argv[0], room, "%s", title);
}

static void workers(int argc, char **argv, int n)
{
	std::vector<std::thread> ts;
	char title[64];

	mu.lock(); /* held until the holder has it */
	std::thread h(holder, &mu);
	mu.unlock();
	while (mu.try_lock()) { /* until the holder holds it */
		mu.unlock();
		usleep(1000);
	}
	for (int i = 0; i < n; i++)
		ts.emplace_back(worker);
	snprintf(title, sizeof(title), "sre: pool of %d workers", n);
	set_title(argc, argv, title);
	target_ready(n + 2);
	h.join();
}

NOINLINE static void terminate_handler(void)
{
	std::type_info *t = abi::__cxa_current_exception_type();
	char *name = t ? abi::__cxa_demangle(t->name(), nullptr, nullptr, nullptr) : nullptr;
	const char *what = "";

	try {
		throw;
	} catch (const std::exception &e) {
		what = e.what();
	} catch (...) {
	}
	printf("exception %s: %s\n", name ? name : "?", what);
	target_ready(2);
	block_in_read();
	_exit(1);
}

namespace storage {
/* Derived from std::runtime_error: its what() is runtime_error's. */
struct DiskFull : std::runtime_error {
	explicit DiskFull(const std::string &m) : std::runtime_error(m) {}
};
}

NOINLINE static void check_disk(int free_mb)
{
	if (free_mb < 10)
		throw storage::DiskFull("disk full on /var/db (" +
					std::to_string(free_mb) + " MB left)");
	KEEP_FRAME();
}

NOINLINE static void *thrower(void *)
{
	check_disk(3);
	KEEP_FRAME();
	return nullptr;
}

static void watch_open(const char *path)
{
	int fd = inotify_init1(IN_CLOEXEC);
	char buf[4096];

	if (fd < 0 || inotify_add_watch(fd, path, IN_OPEN | IN_ACCESS) < 0)
		_exit(2);
	target_ready(2);
	if (read(fd, buf, sizeof(buf)) > 0)
		_exit(0);
}

int main(int argc, char **argv)
{
	pthread_t t;

	target_init();
	if (pipe(block_pipe))
		return 2;
	if (argc > 2 && !strcmp(argv[1], "workers")) {
		workers(argc, argv, atoi(argv[2]));
	} else if (argc > 1 && !strcmp(argv[1], "exit-main")) {
		for (int i = 0; i < 3; i++)
			pthread_create(&t, nullptr, reader_thread, nullptr);
		target_ready(4);
		pthread_exit(nullptr);
	} else if (argc > 2 && !strcmp(argv[1], "exit-on-open")) {
		pthread_create(&t, nullptr, reader_thread, nullptr);
		watch_open(argv[2]);
	} else if (argc > 1 && !strcmp(argv[1], "throw")) {
		std::set_terminate(terminate_handler);
		pthread_create(&t, nullptr, thrower, nullptr);
		block_in_read();
	}
	return 2;
}
