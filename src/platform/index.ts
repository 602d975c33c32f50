export * from './errors.js';
export * from './client.js';
export * from './chunk.js';
export * from './query.js';
export * from './paths.js';
export * from './schemas.js';
