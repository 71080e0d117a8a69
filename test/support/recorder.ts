/** A stand-in service that counts the requests it gets, to prove a command made none; it answers 500 to each. */
import { createServer } from 'node:http';

export interface Recorder {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  /** Requests received so far. */
  readonly count: number;
  close(): Promise<void>;
}

export async function startRecorder(): Promise<Recorder> {
  let count = 0;
  const server = createServer((_req, res) => {
    count++;
    res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return {
    url,
    get count() {
      return count;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
