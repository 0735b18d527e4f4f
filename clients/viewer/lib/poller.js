// What the relay's pollers of clothd share (steptimes.js, energy.js): a
// timer while pages are open, one request at a time, nothing kept while
// no page watches, and giving up on a clothd that lacks what is asked.
// A subclass implements read() (one reading: request, keep, broadcast),
// forget() (clothd was lost: a new process starts its counters and ids
// again) and unwatched() (no page is open: drop what would make a gap
// look continuous).

export class Poller {
  // host: request(cmd, fields) to clothd, broadcast(obj) to every page,
  // watched() whether any page is connected (no page, no polling).
  constructor(host, intervalMs) {
    this.host = host;
    this.intervalMs = intervalMs;
    this.timer = null;
    this.available = null; // null: not asked yet; false: clothd does not have it
    this.polling = false;
  }

  start() {
    if (this.timer || this.available === false) return;
    this.timer = setInterval(() => this.poll().catch(() => {}), this.intervalMs);
    this.poll().catch(() => {});
  }

  // Lost clothd.
  stop() {
    clearInterval(this.timer);
    this.timer = null;
    this.forget();
  }

  // This clothd lacks what the poller reads: not asked again until it is
  // lost (stop) and another one connects.
  giveUp() {
    this.stop();
    this.available = false;
  }

  async poll() {
    if (this.polling) return;
    if (!this.host.watched()) {
      this.unwatched();
      return;
    }
    this.polling = true;
    try {
      await this.read();
    } finally {
      this.polling = false;
    }
  }
}
