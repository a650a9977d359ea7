import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { apiKey } from "./api.ts";
import { isJobKind } from "./kinds/index.ts";
import { BatchesPage, BatchPage } from "./pages/BatchPage.tsx";
import { JobPage } from "./pages/JobPage.tsx";
import { JobsPage } from "./pages/JobsPage.tsx";
import { NewJobPage } from "./pages/NewJobPage.tsx";
import { SignInPage } from "./pages/SignInPage.tsx";
import { VoicesPage } from "./pages/VoicesPage.tsx";
import { ModelsPage } from "./pages/ModelsPage.tsx";
import { UsagePage } from "./pages/UsagePage.tsx";
import "./style.css";

export function navigate(hash: string): void {
  location.hash = hash;
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const onChange = () => setHash(location.hash);
    addEventListener("hashchange", onChange);
    return () => removeEventListener("hashchange", onChange);
  }, []);
  return hash;
}

function route(hash: string, signedIn: boolean) {
  const [path, query = ""] = hash.replace(/^#/, "").split("?");
  const parts = (path || "/").split("/").filter(Boolean);
  const params = new URLSearchParams(query);
  if (parts[0] === "sign-in") return <SignInPage code={parts[1]} />;
  if (!signedIn) return <SignInPage />;
  if (parts[0] === "new") {
    return <NewJobPage kind={parts[1] && isJobKind(parts[1]) ? parts[1] : "vocal-separations"} />;
  }
  if (parts[0] === "jobs" && parts[1] && isJobKind(parts[1]) && parts[2]) {
    return <JobPage kind={parts[1]} id={Number(parts[2])} />;
  }
  if (parts[0] === "batches" && parts[1]) return <BatchPage id={Number(parts[1])} />;
  if (parts[0] === "batches") return <BatchesPage page={Math.max(1, Number(params.get("page")) || 1)} />;
  if (parts[0] === "voices") return <VoicesPage />;
  if (parts[0] === "models") return <ModelsPage />;
  if (parts[0] === "usage") return <UsagePage />;
  return <JobsPage page={Math.max(1, Number(params.get("page")) || 1)} />;
}

function App() {
  const hash = useHash();
  const signedIn = apiKey.get() !== null;
  const section = hash.replace(/^#\/?/, "").split(/[/?]/)[0] || "jobs";
  const link = (href: string, label: string, name: string) => (
    <a href={href} aria-current={section === name ? "page" : undefined}>
      {label}
    </a>
  );
  return (
    <>
      <header class="top">
        <a class="brand" href="#/jobs">
          Mixdown
        </a>
        {signedIn && (
          <nav aria-label="Main">
            {link("#/new/vocal-separations", "New job", "new")}
            {link("#/jobs", "Jobs", "jobs")}
            {link("#/batches", "Batches", "batches")}
            {link("#/voices", "Voice models", "voices")}
            {link("#/models", "Models", "models")}
            {link("#/usage", "Usage", "usage")}
            <button
              type="button"
              class="link"
              onClick={() => {
                apiKey.clear();
                navigate("#/sign-in");
              }}
            >
              Sign out
            </button>
          </nav>
        )}
      </header>
      <main>{route(hash, signedIn)}</main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
