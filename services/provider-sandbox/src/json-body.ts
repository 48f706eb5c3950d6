import { inRequestContext } from '@inbox/service-kit';
import express from 'express';

/** Shared by the controls and every emulated provider, so all accept the same body sizes. */
export const jsonBody = inRequestContext(express.json({ limit: '1mb' }));
