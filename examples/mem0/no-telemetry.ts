/** Imported before mem0ai, which reads MEM0_TELEMETRY once, on load: this example sends Mem0 no usage reports. */
process.env.MEM0_TELEMETRY ??= 'false';
