import Foundation
import PostgresNIO

extension PostgresServer {
    /// What `pg_stat_statements` (issue 40's targets) has counted for one database so far: statements run at the top
    /// level (one round trip each), their planning and execution time, and the planning of statements run inside them
    /// (a function's own statements; counted only with `pg_stat_statements.track = all`). Two of them, taken at the ends
    /// of a window, give the window's figures (``StatementTotals/since(_:)``). `nil` when the extension is not loaded
    /// or not created in the database the server URL names.
    struct StatementTotals: Sendable {
        var topLevelCalls: Double
        var topLevelPlanMilliseconds: Double
        var topLevelExecutionMilliseconds: Double
        var nestedPlanMilliseconds: Double
        /// `pg_stat_statements.track_planning`: without it every planning time reads 0.
        var tracksPlanning: Bool
        /// `pg_stat_statements.track`: `all` counts nested statements.
        var track: String

        func since(_ start: StatementTotals) -> StatementTotals {
            StatementTotals(
                topLevelCalls: topLevelCalls - start.topLevelCalls,
                topLevelPlanMilliseconds: topLevelPlanMilliseconds - start.topLevelPlanMilliseconds,
                topLevelExecutionMilliseconds: topLevelExecutionMilliseconds - start.topLevelExecutionMilliseconds,
                nestedPlanMilliseconds: nestedPlanMilliseconds - start.nestedPlanMilliseconds, tracksPlanning: tracksPlanning,
                track: track)
        }

        /// Planning (top level and nested) against the top-level statements' planning and execution time together
        /// (nested statements run within their caller's execution time). Time, not CPU: a statement waiting for a lock
        /// counts its wait as execution.
        var planningShare: Double? {
            let total = topLevelPlanMilliseconds + topLevelExecutionMilliseconds
            guard tracksPlanning, total > 0 else { return nil }
            return (topLevelPlanMilliseconds + nestedPlanMilliseconds) / total
        }
    }

    func statementTotals(database: String) async -> StatementTotals? {
        let query: PostgresQuery = """
            SELECT coalesce(sum(calls) FILTER (WHERE toplevel), 0)::float8,
                coalesce(sum(total_plan_time) FILTER (WHERE toplevel), 0)::float8,
                coalesce(sum(total_exec_time) FILTER (WHERE toplevel), 0)::float8,
                coalesce(sum(total_plan_time) FILTER (WHERE NOT toplevel), 0)::float8,
                current_setting('pg_stat_statements.track_planning') = 'on', current_setting('pg_stat_statements.track')
            FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = \(database))
            """
        do {
            for try await (calls, plan, execution, nested, tracksPlanning, track) in try await client.query(query)
                .decode((Double, Double, Double, Double, Bool, String).self)
            {
                return StatementTotals(
                    topLevelCalls: calls, topLevelPlanMilliseconds: plan, topLevelExecutionMilliseconds: execution,
                    nestedPlanMilliseconds: nested, tracksPlanning: tracksPlanning, track: track)
            }
        } catch {}
        return nil
    }
}
