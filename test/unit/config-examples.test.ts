import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load-config.ts';

const CONFIG = join(import.meta.dirname, '..', '..', 'config');

describe('config examples', () => {
  for (const file of readdirSync(CONFIG).filter((f) => f.endsWith('.yaml'))) {
    it(`${file} is valid and its model folders exist`, async () => {
      const config = await loadConfigFile(join(CONFIG, file), {});
      expect(config.routes.length).toBeGreaterThan(0);
      for (const model of Object.values(config.models))
        expect(readdirSync(model.path)).toContain('config.json');
    });
  }
});
