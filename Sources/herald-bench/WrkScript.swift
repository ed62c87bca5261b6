import Foundation

/// The Lua script of a ``WrkLoad`` (wrk 4.1's API: `setup`, `init`, `delay`, `request`, `response`, `done`).
///
/// Each wrk thread has a Lua state of its own: `init` pre-formats one request per body, `request` cycles through them,
/// `response` counts, keeps ids and stops the thread at its share of the quota. `done` runs in the main state after
/// the threads have stopped, adds up their counters (`thread:get`) and prints the totals as one JSON line.
///
/// A paced load (``WrkLoad/rate``) has one connection per thread, each with its own share of the bodies, and defines
/// `delay`, which wrk calls before each request of a connection (its first included) and then waits that many
/// milliseconds. With C connections and a rate R, connection i sends its request k at *epoch + i/R + k·C/R* (epoch:
/// C × 2 ms after `setup` ran for the first thread, once wrk has set up the last one), so the connections' sends are
/// spread evenly and add up to R per second. The schedule is fixed: when an answer comes after the next request's
/// time, that request goes at once and is counted late, and the connection catches up, so slow answers do not lower
/// the rate. Times come from `clock_gettime` through LuaJIT's FFI (``ScriptClock``).
enum WrkScript {
    /// The prefix of the JSON line `done()` prints.
    static let marker = "HERALD-BENCH-WRK "

    static func text(for load: WrkLoad) -> String {
        let quotas = (0..<load.threads).map { index in load.quota.map { String(load.share(of: $0, thread: index)) } ?? "nil" }
        let rate = load.rate.map { String($0) } ?? "nil"
        return """
            -- Written by herald-bench (Sources/herald-bench/WrkScript.swift) for one load; see docs/performance.md.
            local bodies_path = \(luaString(load.bodiesFile.path))
            local request_path = \(luaString(load.path))
            -- The method; with addressed lines, each body line is "path<TAB>authorization<TAB>body" (scenario 9).
            local request_method = \(luaString(load.method))
            local addressed = \(load.addressedLines ? "true" : "false")
            local ids_prefix = \(load.keepIDs ? luaString(load.idsPrefix) : "nil")
            local quota_prefix = \(luaString(load.quotaPrefix))
            local thread_count = \(load.threads)
            local quotas = { \(quotas.joined(separator: ", ")) }
            -- Paced loads: requests per second in all, or nil (closed loop); the clock_gettime clock of the times.
            local rate = \(rate)
            local clock_id = \(ScriptClock.id)

            -- Main state: one entry per thread, for done(); when every connection's schedule starts.
            local threads = {}
            local schedule_start

            -- Microseconds of clock_id (wrk's Lua has no clock finer than os.time()'s second).
            local now_us
            if rate then
                local ffi = require("ffi")
                ffi.cdef[[
                    typedef struct { long tv_sec; long tv_nsec; } herald_bench_timespec;
                    int clock_gettime(int clock_id, herald_bench_timespec *time);
                ]]
                local time = ffi.new("herald_bench_timespec")
                now_us = function()
                    ffi.C.clock_gettime(clock_id, time)
                    return tonumber(time.tv_sec) * 1000000 + tonumber(time.tv_nsec) / 1000
                end
            end

            function setup(thread)
                thread:set("thread_index", #threads)
                if rate then
                    -- wrk sets its threads up one after another (about 1 ms each): the schedule starts once all are.
                    schedule_start = schedule_start or now_us() + 2000 * thread_count
                    thread:set("epoch", schedule_start)
                end
                table.insert(threads, thread)
            end

            -- Thread state: every request pre-formatted once; each thread starts at its own place in the list. In a
            -- paced load, each thread (one connection) takes every thread_count-th body only, its own share.
            function init(args)
                prepared = {}
                local headers = { ["Content-Type"] = "application/json" }
                local lines = 0
                for line in io.lines(bodies_path) do
                    if #line > 0 then
                        if addressed then
                            local path, authorization, body = line:match("^([^\t]+)\t([^\t]+)\t(.*)$")
                            local own = { ["Content-Type"] = "application/json", ["Authorization"] = authorization }
                            prepared[#prepared + 1] = wrk.format(request_method, path, own, body)
                        elseif not rate or lines % thread_count == thread_index then
                            prepared[#prepared + 1] = wrk.format(request_method, request_path, headers, line)
                        end
                        lines = lines + 1
                    end
                end
                position = math.floor(thread_index * #prepared / thread_count)
                succeeded, other_status, first_failure = 0, 0, ""
                quota = quotas[thread_index + 1]
                if ids_prefix and rate then
                    -- Written by done(): a file per thread would cost wrk a descriptor per connection, and its event
                    -- loops take descriptors only below 10 + 3 × connections.
                    records = {}
                elseif ids_prefix then
                    ids = io.open(ids_prefix .. thread_index, "w")
                    ids:setvbuf("full")
                end
                if rate then
                    -- This thread's one connection sends every thread_count / rate s, thread_index / rate s after
                    -- the previous thread's; slot is the number of its current request on that schedule.
                    interval = thread_count * 1000000 / rate
                    offset = thread_index * 1000000 / rate
                    slot, due, sent, late, max_slip = nil, 0, 0, 0, 0
                end
            end

            if rate then
                -- Milliseconds until the connection's next request is due: the next slot on its schedule, whenever
                -- the previous answer came. A slot already past is late: sent at once (the connection catches up).
                function delay()
                    local now = now_us()
                    if slot then
                        slot = slot + 1
                    else
                        slot = math.max(0, math.ceil((now - epoch - offset) / interval))
                    end
                    due = epoch + offset + slot * interval
                    if due < now then
                        late = late + 1
                        max_slip = math.max(max_slip, now - due)
                        return 0
                    end
                    -- wrk's timers count whole milliseconds: round up, never before the slot.
                    return math.ceil((due - now) / 1000)
                end
            end

            function request()
                position = position + 1
                if position > #prepared then position = 1 end
                if rate then sent = now_us() end
                return prepared[position]
            end

            function response(status, headers, body)
                local answered = rate and now_us()
                if status >= 200 and status < 300 then
                    succeeded = succeeded + 1
                    local id = (ids or records) and body:match('"id":"([^"]+)"')
                    if id and records then
                        records[#records + 1] = string.format("%s %d %.0f %.0f %.0f", id, thread_index, due, sent, answered)
                    elseif id then
                        ids:write(id, "\\n")
                    end
                    if quota and succeeded == quota then
                        local marker = io.open(quota_prefix .. thread_index, "w")
                        if marker then marker:close() end
                        if ids then ids:flush() end
                        wrk.thread:stop()
                    end
                else
                    other_status = other_status + 1
                    if first_failure == "" then
                        first_failure = (status .. " " .. body:sub(1, 200)):gsub("[^%w %.,:;_/%-%(%)%[%]{}=+]", " ")
                    end
                end
            end

            -- Main state, after the threads have stopped: the totals as one JSON line.
            function done(summary, latency, requests)
                local succeeded, other_status, first_failure, late, max_slip = 0, 0, "", 0, 0
                for _, thread in ipairs(threads) do
                    succeeded = succeeded + thread:get("succeeded")
                    other_status = other_status + thread:get("other_status")
                    if first_failure == "" then first_failure = thread:get("first_failure") or "" end
                    late = late + (thread:get("late") or 0)
                    max_slip = math.max(max_slip, thread:get("max_slip") or 0)
                end
                if ids_prefix and rate then
                    local file = io.open(ids_prefix .. 0, "w")
                    for _, thread in ipairs(threads) do
                        for _, record in ipairs(thread:get("records")) do file:write(record, "\\n") end
                    end
                    file:close()
                end
                local e = summary.errors
                io.write(string.format(
                    '\\n\(marker){"requests":%.0f,"succeeded":%.0f,"otherStatus":%.0f,"connectErrors":%.0f,'
                        .. '"readErrors":%.0f,"writeErrors":%.0f,"timeouts":%.0f,"durationMicroseconds":%.0f,'
                        .. '"p50Microseconds":%.0f,"p99Microseconds":%.0f,"p999Microseconds":%.0f,"maxMicroseconds":%.0f,'
                        .. '"firstFailure":"%s","lateSends":%.0f,"maxSlipMicroseconds":%.0f}\\n',
                    summary.requests, succeeded, other_status, e.connect, e.read, e.write, e.timeout, summary.duration,
                    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max, first_failure,
                    late, max_slip))
            end

            """
    }

    /// A Lua string literal (long brackets cannot hold every path; a quoted, escaped string can).
    private static func luaString(_ text: String) -> String {
        var result = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": result += "\\\\"
            case "\"": result += "\\\""
            case "\n": result += "\\n"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
