/** Placeholder until the PostgreSQL harness lands; replaced below. */
export default function setup(): void {}
