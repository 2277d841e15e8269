-- wrk script: GET <prefix><N> with N random in 0..max on every request.
-- Usage: wrk ... -s bench/skip.lua http://host:port -- '<path prefix ending in skip=>' <max>

local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("thread_no", counter)
end

local prefix = "/"
local max_skip = 0

function init(args)
  prefix = args[1] or "/"
  max_skip = tonumber(args[2] or "0")
  math.randomseed(os.time() * 1000 + (thread_no or 0) * 7919)
end

function request()
  return wrk.format(nil, prefix .. math.random(0, max_skip))
end
