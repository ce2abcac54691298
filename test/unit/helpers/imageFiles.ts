// Tiny real image files of the other three formats (1×1 px), and a way to make their headers claim
// another size (what a hostile file would do).

export const GIF_1X1 = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
export const WEBP_1X1 = Buffer.from('UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==', 'base64');
export const JPEG_1X1 = Buffer.from(
  '/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA=',
  'base64',
);

/** The 1×1 JPEG with its frame header saying `width`×`height`. */
export function jpegClaiming(width: number, height: number): Buffer {
  const b = Buffer.from(JPEG_1X1);
  const sof = b.indexOf(Buffer.from([0xff, 0xc2]));
  b.writeUInt16BE(height, sof + 5);
  b.writeUInt16BE(width, sof + 7);
  return b;
}
