# rb_split.rb SECONDS - a CPU-bound loop whose time splits 75/25 by work
# between heavy and light (the same spin, 3:1 iterations); prints "ready"
# once running. Each round's length is drawn at random (the 3:1 ratio
# kept), so that the rounds do not lock to the sampling's period. Used by
# tests/integration/ruby_profile.

def spin(n)
  x = 0
  i = 0
  while i < n
    x += i
    i += 1
  end
  x
end

def heavy(u)
  spin(30000 * u)
end

def light(u)
  spin(10000 * u)
end

def main
  stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + Float(ARGV[0])
  puts "ready"
  $stdout.flush
  while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
    u = rand(5..15)
    heavy(u)
    light(u)
  end
end

main
