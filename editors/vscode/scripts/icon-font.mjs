/* global Buffer, console */
// Makes media/slipway-icon.woff (the status bar glyph `$(slipway-logo)`, U+E001) from
// media/slipway.svg. Run with `npm run icon-font`; the .woff is committed.
import { createReadStream, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import svg2ttf from 'svg2ttf';
import { SVGIcons2SVGFontStream } from 'svgicons2svgfont';
import ttf2woff from 'ttf2woff';

const media = join(dirname(fileURLToPath(import.meta.url)), '..', 'media');
const svgFont = await new Promise((resolve, reject) => {
  const font = new SVGIcons2SVGFontStream({ fontName: 'slipway-icons', fontHeight: 1000, normalize: true, log: () => {} });
  let out = '';
  font.on('data', (chunk) => (out += chunk.toString()));
  font.on('end', () => resolve(out));
  font.on('error', reject);
  const glyph = createReadStream(join(media, 'slipway.svg'));
  glyph.metadata = { name: 'slipway-logo', unicode: ['\uE001'] };
  font.write(glyph);
  font.end();
});
const ttf = svg2ttf(svgFont, { ts: 0, description: 'slipway icons', version: '1.0' });
const woff = ttf2woff(new Uint8Array(ttf.buffer));
writeFileSync(join(media, 'slipway-icon.woff'), Buffer.from(woff.buffer ?? woff));
console.log(`media/slipway-icon.woff: ${readFileSync(join(media, 'slipway-icon.woff')).length} bytes`);
