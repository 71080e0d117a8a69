/** Column types the tables share. */
import { customType, timestamp } from 'drizzle-orm/pg-core';

/** bytea as Uint8Array on both drivers (postgres.js returns Buffer, PGlite Uint8Array). */
export const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({
  dataType: () => 'bytea',
  toDriver: (value) => Buffer.from(value.buffer, value.byteOffset, value.byteLength),
  fromDriver: (value) => new Uint8Array(value.buffer, value.byteOffset, value.byteLength),
});

export const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
