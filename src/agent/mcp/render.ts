import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Host } from '../host.ts';
import { canonicalJson } from '../safety/guards/loopDetector.ts';

// MCP content blocks → the text a tool result carries. Text stays text; images and binary resources
// are saved under `.keel/tool-output/` and named (a tool_result here is text); structured content is
// shown as canonical JSON when the server gave no text for it. Deterministic for the same result (P1).

export interface RenderedMcpResult {
  readonly text: string;
  readonly isError: boolean;
  /** Files written for binary blocks (workspace-relative). */
  readonly files: readonly string[];
}

const EXTENSIONS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/svg+xml': 'svg',
  'audio/wav': 'wav',
  'audio/mpeg': 'mp3',
  'application/pdf': 'pdf',
};

export function renderMcpResult(result: CallToolResult, host: Host, toolUseId: string): RenderedMcpResult {
  const parts: string[] = [];
  const files: string[] = [];
  const root = host.workspace.roots[0] ?? '';
  const save = (base64: string, mimeType: string | undefined): string => {
    const ext = (mimeType && EXTENSIONS[mimeType]) ?? 'bin';
    const safeId = toolUseId.replace(/[^A-Za-z0-9_-]/g, '_');
    const abs = path.join(host.stateDir, 'tool-output', `${safeId}-mcp-${files.length + 1}.${ext}`);
    // StoragePort writes text; binary bytes go to the file as they are.
    fs.mkdirSync(path.dirname(abs), { recursive: true });
    fs.writeFileSync(abs, Buffer.from(base64, 'base64'));
    const rel = path.relative(root, abs);
    files.push(rel);
    return rel;
  };
  const content = Array.isArray(result.content) ? result.content : [];
  let hasText = false;
  for (const block of content) {
    switch (block.type) {
      case 'text':
        hasText = true;
        parts.push(block.text);
        break;
      case 'image':
      case 'audio': {
        const bytes = Math.floor((block.data.length * 3) / 4);
        parts.push(
          `[${block.type} ${block.mimeType}, ~${bytes} bytes, saved to ${save(block.data, block.mimeType)}]`,
        );
        break;
      }
      case 'resource': {
        const r = block.resource;
        if ('text' in r && typeof r.text === 'string') {
          hasText = true;
          parts.push(`[resource ${r.uri}${r.mimeType ? ` (${r.mimeType})` : ''}]\n${r.text}`);
        } else if ('blob' in r && typeof r.blob === 'string') {
          parts.push(
            `[resource ${r.uri}${r.mimeType ? ` (${r.mimeType})` : ''}, saved to ${save(r.blob, r.mimeType)}]`,
          );
        }
        break;
      }
      case 'resource_link':
        parts.push(
          `[resource link ${block.uri}${block.name ? ` "${block.name}"` : ''}${block.description ? `: ${block.description}` : ''}]`,
        );
        break;
      default:
        parts.push(`[unsupported content block: ${(block as { type: string }).type}]`);
    }
  }
  if (result.structuredContent !== undefined && !hasText) {
    parts.push(`structuredContent: ${canonicalJson(result.structuredContent)}`);
  }
  const text = parts.length > 0 ? parts.join('\n') : '(the tool returned no content)';
  const normalised = text
    .replace(/\r\n/g, '\n')
    .replace(/\u00a0/g, ' ')
    .replace(/\0/g, '');
  return { text: normalised, isError: result.isError === true, files };
}
