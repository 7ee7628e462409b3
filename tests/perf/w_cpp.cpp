// w_cpp.cpp - perf_compare workload: C++ with templates, virtual calls,
// std::sort with a lambda, std::function and two threads. Runs argv[1] ms.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace shapes {
struct Shape {
	virtual ~Shape() = default;
	virtual double area(int n) const = 0;
};
struct Square : Shape {
	double s;
	explicit Square(double x) : s(x) {}
	__attribute__((noinline)) double area(int n) const override
	{
		double a = 0;
		for (int i = 0; i < n; i++)
			a += s * s / (i + 1);
		return a;
	}
};
} // namespace shapes

template <typename T> struct Acc {
	T total{};
	__attribute__((noinline)) void add(const std::vector<T> &v)
	{
		for (const T &x : v)
			total += x * 3 / 2;
	}
};

static volatile double sink;

__attribute__((noinline)) static void sorter(std::vector<int> &v, unsigned seed)
{
	for (auto &x : v)
		x = (int)rand_r(&seed);
	std::sort(v.begin(), v.end(), [](int a, int b) {
		for (volatile int i = 0; i < 10; i++)
			;
		return a < b;
	});
}

__attribute__((noinline)) static double deep(int n, const std::function<double(int)> &f)
{
	if (n == 0)
		return f(20000);
	return deep(n - 1, f) + 1;
}

static void work(long ms, unsigned seed)
{
	auto t0 = std::chrono::steady_clock::now();
	std::vector<int> v(3000);
	std::unique_ptr<shapes::Shape> sq(new shapes::Square(1.5));
	Acc<long> acc;
	std::vector<long> big(20000, 7);

	while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(ms)) {
		sorter(v, seed++);
		sink = deep(8 + seed % 10, [&](int n) { return sq->area(n); });
		acc.add(big);
		sink = (double)acc.total;
	}
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 1000;
	std::thread t(work, ms, 3u);
	work(ms, 5u);
	t.join();
	return 0;
}
