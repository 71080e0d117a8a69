/** A loopback port nothing listens on now. */
export declare function freePort(): Promise<number>;
