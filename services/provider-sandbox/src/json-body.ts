import express from 'express';

/** Shared by the controls and every emulated provider, so all accept the same body sizes. */
export const jsonBody = express.json({ limit: '1mb' });
