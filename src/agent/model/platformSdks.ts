// The Bedrock and Vertex SDKs (and the AWS / Google auth libraries they pull in): imported only when a
// profile of theirs is used. The CLI bundle puts this in a chunk of its own; the extension bundle
// leaves it out and loads it from dist/platform-sdks.cjs (scripts/build-ext.mjs), so neither's
// start pays for them.
export { AnthropicBedrock } from '@anthropic-ai/bedrock-sdk';
export { AnthropicVertex } from '@anthropic-ai/vertex-sdk';
