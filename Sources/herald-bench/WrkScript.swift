import Foundation

/// The Lua script of a ``WrkLoad`` (wrk 4.1's API: `setup`, `init`, `request`, `response`, `done`).
///
/// Each wrk thread has a Lua state of its own: `init` pre-formats one request per body, `request` cycles through them,
/// `response` counts, keeps ids and stops the thread at its share of the quota. `done` runs in the main state after
/// the threads have stopped, adds up their counters (`thread:get`) and prints the totals as one JSON line.
enum WrkScript {
    /// The prefix of the JSON line `done()` prints.
    static let marker = "HERALD-BENCH-WRK "

    static func text(for load: WrkLoad) -> String {
        let quotas = (0..<load.threads).map { index in load.quota.map { String(load.share(of: $0, thread: index)) } ?? "nil" }
        return """
            -- Written by herald-bench (Sources/herald-bench/WrkScript.swift) for one load; see docs/performance.md.
            local bodies_path = \(luaString(load.bodiesFile.path))
            local request_path = \(luaString(load.path))
            local ids_prefix = \(load.keepIDs ? luaString(load.idsPrefix) : "nil")
            local quota_prefix = \(luaString(load.quotaPrefix))
            local thread_count = \(load.threads)
            local quotas = { \(quotas.joined(separator: ", ")) }

            -- Main state: one entry per thread, for done().
            local threads = {}

            function setup(thread)
                thread:set("thread_index", #threads)
                table.insert(threads, thread)
            end

            -- Thread state: every request pre-formatted once; each thread starts at its own place in the list.
            function init(args)
                prepared = {}
                local headers = { ["Content-Type"] = "application/json" }
                for line in io.lines(bodies_path) do
                    if #line > 0 then
                        prepared[#prepared + 1] = wrk.format("POST", request_path, headers, line)
                    end
                end
                position = math.floor(thread_index * #prepared / thread_count)
                succeeded, other_status, first_failure = 0, 0, ""
                quota = quotas[thread_index + 1]
                if ids_prefix then
                    ids = io.open(ids_prefix .. thread_index, "w")
                    ids:setvbuf("full")
                end
            end

            function request()
                position = position + 1
                if position > #prepared then position = 1 end
                return prepared[position]
            end

            function response(status, headers, body)
                if status >= 200 and status < 300 then
                    succeeded = succeeded + 1
                    if ids then
                        local id = body:match('"id":"([^"]+)"')
                        if id then ids:write(id, "\\n") end
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
                local succeeded, other_status, first_failure = 0, 0, ""
                for _, thread in ipairs(threads) do
                    succeeded = succeeded + thread:get("succeeded")
                    other_status = other_status + thread:get("other_status")
                    if first_failure == "" then first_failure = thread:get("first_failure") or "" end
                end
                local e = summary.errors
                io.write(string.format(
                    '\\n\(marker){"requests":%.0f,"succeeded":%.0f,"otherStatus":%.0f,"connectErrors":%.0f,'
                        .. '"readErrors":%.0f,"writeErrors":%.0f,"timeouts":%.0f,"durationMicroseconds":%.0f,'
                        .. '"p50Microseconds":%.0f,"p99Microseconds":%.0f,"p999Microseconds":%.0f,"maxMicroseconds":%.0f,'
                        .. '"firstFailure":"%s"}\\n',
                    summary.requests, succeeded, other_status, e.connect, e.read, e.write, e.timeout, summary.duration,
                    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max, first_failure))
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
