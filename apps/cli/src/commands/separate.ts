/**
 * `pnpm mixdown separate …` belongs to @mixdown/separation; it is imported only when used, so the
 * other commands never load onnxruntime.
 */
export async function separateCommand(argv: string[]): Promise<number> {
  let separation: { runSeparateCommand?: (argv: string[]) => Promise<number> };
  try {
    // A computed specifier: the package may not export the command yet, and typecheck must pass either way.
    const specifier = "@mixdown/separation";
    separation = await import(specifier);
  } catch (error) {
    console.error(`The separation engine could not be loaded: ${(error as Error).message}`);
    return 1;
  }
  if (typeof separation.runSeparateCommand !== "function") {
    console.error("This checkout's @mixdown/separation has no `separate` command yet.");
    return 1;
  }
  return separation.runSeparateCommand(argv);
}
