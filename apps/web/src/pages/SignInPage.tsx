import { useEffect, useState } from "preact/hooks";
import { apiKey, errorText, kits } from "../api.ts";
import { navigate } from "../main.tsx";

/** Paste an API key, or arrive with the one-time code of the link `mixdown up` prints. */
export function SignInPage({ code }: { code?: string }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(Boolean(code));
  const [key, setKey] = useState("");

  useEffect(() => {
    if (!code) return;
    // The code is used up either way: it must not stay in the address bar or the history.
    history.replaceState(null, "", `${location.pathname}#/sign-in`);
    kits
      .POST("/dashboard/sign-in", { body: { code } })
      .then(({ data, error: failure, response }) => {
        if (!data) throw new Error(errorText(failure, response));
        apiKey.set(data.apiKey);
        navigate("#/jobs");
      })
      .catch((err: Error) => setError(err.message))
      .finally(() => setBusy(false));
  }, [code]);

  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    const candidate = key.trim();
    // Any authenticated read tells whether the key works.
    const { response } = await kits.GET("/api/kits/v1/separation-models", {
      headers: { authorization: `Bearer ${candidate}` },
    });
    if (response.status === 401) return setError("This API key is unknown or revoked.");
    if (!response.ok) return setError(`The server answered ${response.status}.`);
    apiKey.set(candidate);
    navigate("#/jobs");
  };

  return (
    <section class="narrow">
      <h1>Sign in</h1>
      {busy && <p role="status">Signing in with the link's code…</p>}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <form onSubmit={submit}>
        <label>
          API key
          <input
            type="password"
            name="apiKey"
            autoComplete="off"
            placeholder="mxd_…"
            required
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
          />
        </label>
        <p class="hint">
          Kept in this browser's storage and sent as <code>Authorization: Bearer</code>. Create one with{" "}
          <code>./mixdown.sh keys create NAME</code>, or open the dashboard link <code>./mixdown.sh up</code> prints.
        </p>
        <button type="submit">Sign in</button>
      </form>
    </section>
  );
}
