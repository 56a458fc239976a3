// @ts-check
/// <reference lib="dom" />
/**
 * What folds away on a small screen: the sidebar becomes a drawer, the
 * conversation's actions a menu, and the keyboard shortcuts a help panel
 * (on a wide screen the shortcuts also stand in the footer); and the
 * memories panel, over the conversation at any size.
 */
import { $ } from "./dom.js";

/** The panels that open over the page, and how each is toggled. */
export class Panels {
  constructor() {
    $("menu").addEventListener("click", () => this.drawer(!this.drawerOpen));
    $("scrim").addEventListener("click", () => this.closeAll());
    $("more").addEventListener("click", () => this.actions(!this.actionsOpen));
    $("help").addEventListener("click", () => this.help(!this.helpOpen));
    $("help-close").addEventListener("click", () => this.help(false));
    // An action taken from the menu closes it.
    $("conv-actions").addEventListener("click", (event) => {
      if (event.target instanceof HTMLButtonElement) this.actions(false);
    });
  }

  get drawerOpen() {
    return document.body.classList.contains("drawer-open");
  }

  get actionsOpen() {
    return $("conv-actions").classList.contains("open");
  }

  get helpOpen() {
    return !$("keys-help").hidden;
  }

  get memoriesOpen() {
    return !$("memories-panel").hidden;
  }

  /** Opens or closes the sidebar drawer (small screens). */
  drawer(/** @type {boolean} */ open) {
    document.body.classList.toggle("drawer-open", open);
    $("menu").setAttribute("aria-expanded", String(open));
    if (!open) return;
    this.actions(false);
    // The panel would stand over the drawer.
    this.memories(false);
  }

  /** Opens or closes the conversation's actions menu (small screens). */
  actions(/** @type {boolean} */ open) {
    $("conv-actions").classList.toggle("open", open);
    $("more").setAttribute("aria-expanded", String(open));
  }

  /** Shows or hides the keyboard shortcuts. */
  help(/** @type {boolean} */ open) {
    $("keys-help").hidden = !open;
    $("help").setAttribute("aria-expanded", String(open));
  }

  /** Shows or hides the memories panel; the drawer and the menus make way. */
  memories(/** @type {boolean} */ open) {
    $("memories-panel").hidden = !open;
    for (const id of ["memories-open", "memories-count"]) {
      $(id).setAttribute("aria-expanded", String(open));
    }
    if (!open) return;
    this.drawer(false);
    this.actions(false);
    this.help(false);
  }

  /** Closes whatever is open; false when nothing was. */
  closeAll() {
    const any = this.drawerOpen || this.actionsOpen || this.helpOpen ||
      this.memoriesOpen;
    this.drawer(false);
    this.actions(false);
    this.help(false);
    this.memories(false);
    return any;
  }

  /** Whether the sidebar is a drawer here (the screen is narrow). */
  get narrow() {
    return getComputedStyle($("menu")).display !== "none";
  }
}
