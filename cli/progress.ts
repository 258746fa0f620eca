// A terminal progress bar for long operator commands (replay, restore); when not a TTY, a plain line at most every
// 5 seconds and one for the end (a log file gets a readable trail, not a line per step, nor the last one twice).
export class ProgressBar {
  private lastDraw = 0;
  private ended = false;
  constructor(private readonly label: string, private readonly out: NodeJS.WriteStream = process.stderr) {}

  update(done: number, total: number, extra = ""): void {
    const now = Date.now();
    const end = done >= total;
    if (end ? this.ended : now - this.lastDraw < (this.out.isTTY ? 100 : 5_000)) return;
    this.lastDraw = now;
    this.ended = end;
    const pct = total > 0 ? Math.min(1, done / total) : 1;
    const width = 30;
    const bar = "#".repeat(Math.round(pct * width)).padEnd(width, ".");
    const line = `${this.label} [${bar}] ${(pct * 100).toFixed(1)}% ${done}/${total} ${extra}`;
    this.out.write(this.out.isTTY ? `\r${line}` : line + "\n");
  }

  finish(message: string): void {
    this.out.write((this.out.isTTY ? "\n" : "") + message + "\n");
  }
}
