// The field's two OpenAPI linters, run on a document as their CLIs run them with their
// recommended rulesets: Spectral (`spectral:oas`) and Redocly (`recommended`).
import { createConfig, lintFromString } from "@redocly/openapi-core";
import spectralCore from "@stoplight/spectral-core";
import spectralParsers from "@stoplight/spectral-parsers";
import spectralRulesets from "@stoplight/spectral-rulesets";

export interface LintProblem {
  linter: "spectral" | "redocly";
  severity: "error" | "warning" | "info" | "hint";
  rule: string;
  where: string;
  message: string;
}

const SPECTRAL_SEVERITIES = ["error", "warning", "info", "hint"] as const;

export async function spectralProblems(document: string): Promise<LintProblem[]> {
  const spectral = new spectralCore.Spectral();
  spectral.setRuleset({ extends: [[spectralRulesets.oas, "recommended"]] } as never);
  const results = await spectral.run(new spectralCore.Document(document, spectralParsers.Json));
  return results.map((r) => ({
    linter: "spectral",
    severity: SPECTRAL_SEVERITIES[r.severity] ?? "error",
    rule: String(r.code),
    where: r.path.join("."),
    message: r.message,
  }));
}

export async function redoclyProblems(document: string): Promise<LintProblem[]> {
  const config = await createConfig({ extends: ["recommended"] });
  const results = await lintFromString({ source: document, absoluteRef: "openapi.json", config });
  return results.map((r) => ({
    linter: "redocly",
    severity: r.severity === "error" ? "error" : "warning",
    rule: r.ruleId,
    where: r.location[0]?.pointer ?? "",
    message: r.message,
  }));
}
