;;; citeline.el --- Ask your documents, with citations, through eglot  -*- lexical-binding: t; -*-

;; Keywords: tools, docs
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))

;;; Commentary:

;; A minimal Emacs client for `citeline serve' (see docs/lsp-extensions.md).
;;
;;   (add-to-list 'load-path "/path/to/citeline/editor-clients/emacs")
;;   (require 'citeline)
;;   (setq citeline-server-command '("/path/to/citeline/.venv/bin/citeline" "serve"))
;;   (citeline-setup)
;;
;; Then `M-x eglot' in a Markdown, Org or text buffer of your documents folder,
;; and `M-x citeline-ask' / `M-x citeline-search' / `M-x citeline-status'.
;; The answer buffer lists the citations as buttons that open the cited lines.
;; Hover (eldoc) shows the passages the sentence at point is about; documents
;; that cannot be indexed get a diagnostic (flymake).

;;; Code:

(require 'eglot)
(require 'jsonrpc)
(require 'button)
(require 'subr-x)

(defgroup citeline nil
  "Ask your documents from Emacs."
  :group 'tools)

(defcustom citeline-server-command '("citeline" "serve")
  "Command that starts the Citeline language server."
  :type '(repeat string))

(defcustom citeline-modes '(markdown-mode gfm-mode org-mode text-mode rst-mode)
  "Major modes in which eglot uses Citeline."
  :type '(repeat symbol))

(defcustom citeline-initialization-options nil
  "Citeline settings sent as initializationOptions (a plist, camelCase keys).
For example \\='(:search (:topK 5) :answer (:maxAnswerTokens 256))."
  :type 'sexp)

(defcustom citeline-request-timeout 300
  "Seconds to wait for an answer (small models on busy machines are slow)."
  :type 'integer)

(defvar citeline-last-status nil
  "The latest `citeline/status' notification (a plist).")

(defclass citeline-server (eglot-lsp-server) ()
  :documentation "The Citeline language server.")

(cl-defmethod eglot-initialization-options ((_server citeline-server))
  (or citeline-initialization-options eglot--{}))

(cl-defmethod eglot-handle-notification
  ((_server citeline-server) (_method (eql citeline/status)) &rest params)
  "Keep the folders' state from a `citeline/status' notification."
  (setq citeline-last-status params))

;;;###autoload
(defun citeline-setup ()
  "Register Citeline with eglot for `citeline-modes'."
  (add-to-list 'eglot-server-programs
               (cons citeline-modes (cons 'citeline-server citeline-server-command))))

(defun citeline--server ()
  (or (eglot-current-server)
      (user-error "No Citeline server here: run M-x eglot in a document buffer")))

(defun citeline--request (method params)
  (jsonrpc-request (citeline--server) method params :timeout citeline-request-timeout))

(defun citeline--uri-file (uri)
  (eglot--uri-to-path (replace-regexp-in-string "#.*\\'" "" uri)))

(defun citeline--open (item)
  "Open the place a citation or hit ITEM points at."
  (let* ((file (citeline--uri-file (plist-get item :uri)))
         (range (plist-get item :range))
         (line (plist-get (plist-get range :start) :line)))
    (find-file-other-window file)
    (goto-char (point-min))
    (forward-line (or line 0))))

(defun citeline--location (item)
  (let ((page (plist-get item :page))
        (start (plist-get item :start_line))
        (end (plist-get item :end_line)))
    (cond ((numberp page) (format "%s, page %d" (plist-get item :path) page))
          ((numberp start) (format "%s:%d-%d" (plist-get item :path) start end))
          (t (plist-get item :path)))))

(defun citeline--insert-items (items)
  (seq-doseq (item items)
    (let ((n (plist-get item :n))
          (section (plist-get item :section)))
      (insert (if (numberp n) (format "[%d] " n) "- "))
      (insert-text-button (citeline--location item)
                          'action (lambda (_) (citeline--open item))
                          'follow-link t)
      (when (and (stringp section) (not (string-empty-p section)))
        (insert "  " section))
      (insert "\n"))))

;;;###autoload
(defun citeline-ask (question)
  "Ask QUESTION of the documents; show the answer and its citations."
  (interactive "sAsk your documents: ")
  (let* ((answer (citeline--request :citeline/ask (list :question question)))
         (citations (plist-get answer :citations)))
    (with-current-buffer (get-buffer-create "*citeline*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (propertize question 'face 'bold) "\n\n")
        (insert (plist-get answer :answer) "\n")
        (when (> (length citations) 0)
          (insert "\nSources:\n")
          (citeline--insert-items citations))
        (goto-char (point-min))
        (special-mode))
      (display-buffer (current-buffer)))
    answer))

;;;###autoload
(defun citeline-search (query)
  "Search the documents for QUERY; list the passages with links."
  (interactive "sSearch your documents: ")
  (let ((hits (plist-get (citeline--request :citeline/search (list :query query)) :hits)))
    (with-current-buffer (get-buffer-create "*citeline search*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (propertize query 'face 'bold) "\n\n")
        (citeline--insert-items hits)
        (goto-char (point-min))
        (special-mode))
      (display-buffer (current-buffer)))
    hits))

;;;###autoload
(defun citeline-status ()
  "Show the state of the documents folders."
  (interactive)
  (let ((status (citeline--request :citeline/status eglot--{})))
    (message "%s"
             (mapconcat
              (lambda (folder)
                (format "%s: %s, %d files, %d chunks, %d pending"
                        (citeline--uri-file (plist-get folder :uri))
                        (plist-get folder :state) (plist-get folder :files)
                        (plist-get folder :chunks) (plist-get folder :pending)))
              (plist-get status :folders) "\n"))
    status))

(provide 'citeline)
;;; citeline.el ends here
