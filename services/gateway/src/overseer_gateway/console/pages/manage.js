// What the Cognitive Objects, Policy and Agents pages share: their stylesheet, loaded once.

export function useStyles() {
  if (document.querySelector("link[data-manage-css]")) return;
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = "/console/manage.css";
  link.dataset.manageCss = "";
  document.head.append(link);
}
