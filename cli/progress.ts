// A terminal progress bar for long operator commands (replay, restore); plain lines when not a TTY.
export class ProgressBar {
  private lastDraw = 0;
  constructor(private readonly label: string, private readonly out: NodeJS.WriteStream = process.stderr) {}

  update(done: number, total: number, extra = ""): void {
    const now = Date.now();
    if (now - this.lastDraw < 100 && done < total) return;
    this.lastDraw = now;
    const pct = total > 0 ? Math.min(1, done / total) : 1;
    const width = 30;
    const bar = "#".repeat(Math.round(pct * width)).padEnd(width, ".");
    const line = `${this.label} [${bar}] ${(pct * 100).toFixed(1)}% ${done}/${total} ${extra}`;
    if (this.out.isTTY) this.out.write(`\r${line}`);
    else if (done >= total || now % 5 === 0) this.out.write(line + "\n");
  }

  finish(message: string): void {
    this.out.write((this.out.isTTY ? "\n" : "") + message + "\n");
  }
}
