import * as fs from 'node:fs';
import * as path from 'node:path';

// The three real MCP servers from npm (dev dependencies), run from node_modules with this Node — tests
// never download anything.

export function serverScript(pkg: 'everything' | 'filesystem' | 'memory'): string {
  return path.resolve('node_modules', '@modelcontextprotocol', `server-${pkg}`, 'dist', 'index.js');
}

export interface McpFileOptions {
  /** Directory the filesystem server may access. */
  readonly fsRoot: string;
  /** Where the memory server keeps its graph. */
  readonly memoryFile: string;
}

/** A VS Code-format mcp.json with everything, filesystem and memory. */
export function threeServers(options: McpFileOptions): Record<string, unknown> {
  return {
    servers: {
      everything: {
        type: 'stdio',
        command: process.execPath,
        args: [serverScript('everything'), 'stdio'],
        description: 'MCP reference test server',
      },
      fs: {
        type: 'stdio',
        command: process.execPath,
        args: [serverScript('filesystem'), options.fsRoot],
      },
      memory: {
        type: 'stdio',
        command: process.execPath,
        args: [serverScript('memory')],
        env: { MEMORY_FILE_PATH: options.memoryFile },
        description: 'knowledge graph memory',
      },
    },
  };
}

export function writeJson(file: string, value: unknown): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
  return file;
}
