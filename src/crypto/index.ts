export * from './bytes.js';
export * from './certificate.js';
export * from './context.js';
export * from './derive.js';
export * from './envelope.js';
export * from './wrap.js';
