#!/usr/bin/env node
/**
 * The installed `lethe` command (package.json `bin`): always runs the CLI, whatever path or
 * symlink (`node_modules/.bin/lethe`, `npx lethe`) started it.
 */
import { runCli } from './main.js';

void runCli();
