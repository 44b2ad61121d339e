// outbox plugin for OpenCode, written by `outbox init --agent opencode`;
// `outbox init --agent opencode --undo` removes it.
//
// Before each bash tool call it asks `outbox hook opencode` whether the
// command can run through outbox (a bounded envelope instead of the whole
// output; the exit status and the full output kept), and runs the command
// it answers with. No answer, or any failure, leaves the call as it was.
import { spawnSync } from "node:child_process";

const OUTBOX = "@OUTBOX@";

export const OutboxPlugin = async () => ({
  "tool.execute.before": async (input, output) => {
    if (input.tool !== "bash" || !output.args || typeof output.args.command !== "string") return;
    const payload = JSON.stringify({
      tool: input.tool,
      sessionID: input.sessionID,
      callID: input.callID,
      args: output.args,
    });
    const run = spawnSync(OUTBOX, ["hook", "opencode"], { input: payload, encoding: "utf8", timeout: 10000 });
    if (run.status !== 0 || !run.stdout) return;
    try {
      const answer = JSON.parse(run.stdout);
      if (answer && answer.args && typeof answer.args.command === "string") {
        output.args.command = answer.args.command;
      }
    } catch {
      // Not an answer: leave the call alone.
    }
  },
});
