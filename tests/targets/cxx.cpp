/* cxx.cpp - gdb-comparison target in C++: the main thread blocks at the
 * end of a chain of templates, a std::function, a lambda and a generic
 * lambda; a second std::thread blocks inside a catch block. */
#include <functional>
#include <stdexcept>
#include <thread>
#include <mutex>
#include <condition_variable>
#include "target.h"

namespace ss_target {

static int block_pipe[2];
static std::mutex mu;
static std::condition_variable cv;
static bool in_catch;

NOINLINE int block_forever(int v)
{
	char c;

	target_ready(2);
	while (read(block_pipe[0], &c, 1) != 0)
		;
	return v;
}

template <typename T, int N> struct Nest {
	static NOINLINE T run(T v, const std::function<T(T)> &leaf)
	{
		T r = Nest<T, N - 1>::run(v + N, leaf);

		KEEP_FRAME();
		return r * 3;
	}
};

template <typename T> struct Nest<T, 0> {
	static NOINLINE T run(T v, const std::function<T(T)> &leaf)
	{
		T r = leaf(v);

		KEEP_FRAME();
		return r - 1;
	}
};

template <typename T> class Pipeline {
public:
	explicit Pipeline(T seed) : seed_(seed) {}
	NOINLINE T start()
	{
		int (*volatile block)(int) = block_forever;
		/* A generic lambda is a member template of its closure type. */
		auto generic = [block](auto x) __attribute__((noinline)) {
			auto r = block(static_cast<int>(x) + 1);
			KEEP_FRAME();
			return r;
		};
		std::function<T(T)> leaf = [&generic](T v)
			__attribute__((noinline)) -> T {
			T r = generic(v * 2);
			KEEP_FRAME();
			return r;
		};
		T r = Nest<T, 2>::run(seed_, leaf);

		KEEP_FRAME();
		return r;
	}

private:
	T seed_;
};

NOINLINE void wait_in_catch(const std::exception &e)
{
	char c;

	{
		std::lock_guard<std::mutex> g(mu);
		in_catch = true;
	}
	cv.notify_one();
	while (read(block_pipe[0], &c, 1) != 0)
		;
	(void)e.what();
}

NOINLINE void thrower(int v)
{
	if (v >= 0)
		throw std::runtime_error("into the catch block");
	KEEP_FRAME();
}

static void (*volatile call_thrower)(int) = thrower;

NOINLINE void catcher(int v)
{
	try {
		call_thrower(v);
	} catch (const std::exception &e) {
		wait_in_catch(e);
	}
	KEEP_FRAME();
}

} // namespace ss_target

int main()
{
	target_init();
	if (pipe(ss_target::block_pipe) != 0)
		return 2;
	std::thread t([]() __attribute__((noinline)) {
		ss_target::catcher(1);
		KEEP_FRAME();
	});
	pthread_setname_np(t.native_handle(), "t_catch");
	{
		std::unique_lock<std::mutex> g(ss_target::mu);
		ss_target::cv.wait(g, [] { return ss_target::in_catch; });
	}
	ss_target::Pipeline<int> p(7);
	int r = p.start();
	KEEP_FRAME();
	t.join();
	return r;
}
