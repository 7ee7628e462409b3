# rb_threads64.rb - 64 Ruby threads, each asleep 10 Ruby calls deep (a
# C method, sleep, at the top), for the freeze cost of reading Ruby's
# control frames (BENCHMARKS.md, "Runtime frames"). Runs until killed.

def depth(n)
  n.zero? ? sleep : depth(n - 1)
end

64.times.map { Thread.new { depth(9) } }
sleep
